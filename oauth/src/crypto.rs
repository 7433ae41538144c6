//! Keys, random tokens, keyed hashes, sealing and signatures for the OAuth
//! layer (ring, already in the tree through rustls).
//!
//! - Every token, code and state id is 256 random bits, stored only as
//!   HMAC-SHA256 under the server's hashing key ([`ServerKeys::hash`]).
//! - A grant's upstream tokens are sealed (AES-256-GCM) under a random
//!   grant key. The grant key is stored only wrapped under keys derived
//!   (HKDF) from each downstream token or code of the grant, so the store
//!   alone cannot unseal anything: a valid downstream token is needed.
//! - Cookies, CSRF tokens and signed values carry an HMAC under a key
//!   derived from the server secret for their purpose.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf::{HKDF_SHA256, KeyType, Salt};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use super::model::TokenHash;

/// Bytes of randomness in every issued token, code and state id.
pub const TOKEN_BYTES: usize = 32;

/// Length of an AES-256 key.
pub const KEY_LEN: usize = 32;

/// The server secret is too short or not base64url.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Not base64url, or fewer than 32 bytes.
    #[error(
        "the OAuth server secret must be at least 32 random bytes, base64url-encoded (e.g. `openssl rand -base64 32 | tr '+/' '-_' | tr -d =`)"
    )]
    Secret,
    /// The system random source failed.
    #[error("the system random number generator failed")]
    Random,
}

struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn derive(ikm: &[u8], salt: &[u8], info: &[u8]) -> [u8; KEY_LEN] {
    let prk = Salt::new(HKDF_SHA256, salt).extract(ikm);
    let mut out = [0u8; KEY_LEN];
    // `expand`/`fill` fail only for outputs longer than 255 hash blocks.
    if let Ok(okm) = prk.expand(&[info], Len(KEY_LEN)) {
        let _ = okm.fill(&mut out);
    }
    out
}

/// Keys derived from the server secret, shared by every instance.
pub struct ServerKeys {
    hashing: hmac::Key,
    signing: hmac::Key,
    state_key: [u8; KEY_LEN],
    random: SystemRandom,
}

impl std::fmt::Debug for ServerKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerKeys(..)")
    }
}

impl ServerKeys {
    /// Derives the keys from a base64url secret (padding tolerated).
    ///
    /// # Errors
    ///
    /// Fewer than 32 bytes, or not base64url.
    pub fn from_secret(secret: &str) -> Result<Self, KeyError> {
        let trimmed = secret.trim().trim_end_matches('=');
        let bytes = URL_SAFE_NO_PAD
            .decode(trimmed)
            .map_err(|_| KeyError::Secret)?;
        if bytes.len() < 32 {
            return Err(KeyError::Secret);
        }
        Ok(Self::from_bytes(&bytes))
    }

    /// Derives the keys from raw secret bytes.
    pub fn from_bytes(secret: &[u8]) -> Self {
        const SALT: &[u8] = b"toolforge-oauth-v1";
        Self {
            hashing: hmac::Key::new(hmac::HMAC_SHA256, &derive(secret, SALT, b"token-hash")),
            signing: hmac::Key::new(hmac::HMAC_SHA256, &derive(secret, SALT, b"signing")),
            state_key: derive(secret, SALT, b"state-seal"),
            random: SystemRandom::new(),
        }
    }

    /// 32 fresh random bytes.
    ///
    /// # Errors
    ///
    /// The system random source failed.
    pub fn random_key(&self) -> Result<[u8; KEY_LEN], KeyError> {
        let mut key = [0u8; KEY_LEN];
        self.random.fill(&mut key).map_err(|_| KeyError::Random)?;
        Ok(key)
    }

    /// A fresh token: `prefix` then 256 random bits in base64url.
    ///
    /// # Errors
    ///
    /// The system random source failed.
    pub fn new_token(&self, prefix: &str) -> Result<String, KeyError> {
        let bytes = self.random_key()?;
        Ok(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The keyed hash a token is stored and looked up by.
    pub fn hash(&self, token: &str) -> TokenHash {
        let tag = hmac::sign(&self.hashing, token.as_bytes());
        let mut out = [0u8; 32];
        out.copy_from_slice(tag.as_ref());
        TokenHash(out)
    }

    /// `value.signature` for a purpose (cookies, CSRF, the consent request).
    pub fn sign(&self, purpose: &str, value: &str) -> String {
        let tag = hmac::sign(&self.signing, &signed_input(purpose, value));
        format!("{value}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The value of a [`ServerKeys::sign`] output, when its signature for
    /// `purpose` checks out (compared in constant time).
    pub fn verify<'a>(&self, purpose: &str, signed: &'a str) -> Option<&'a str> {
        let (value, signature) = signed.rsplit_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(signature).ok()?;
        hmac::verify(&self.signing, &signed_input(purpose, value), &tag).ok()?;
        Some(value)
    }

    /// Seals data under the server's state key (sign-ins in flight).
    ///
    /// # Errors
    ///
    /// The system random source failed.
    pub fn seal_state(&self, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, KeyError> {
        seal(&self.state_key, plaintext, aad)
    }

    /// Opens data sealed by [`ServerKeys::seal_state`].
    pub fn open_state(&self, sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
        open(&self.state_key, sealed, aad)
    }
}

fn signed_input(purpose: &str, value: &str) -> Vec<u8> {
    let mut input = Vec::with_capacity(purpose.len() + value.len() + 1);
    input.extend_from_slice(purpose.as_bytes());
    input.push(0);
    input.extend_from_slice(value.as_bytes());
    input
}

/// The key a downstream token or code wraps its grant key under.
pub fn wrapping_key(token: &str) -> [u8; KEY_LEN] {
    derive(token.as_bytes(), b"toolforge-oauth-wrap-v1", b"grant-key")
}

/// AES-256-GCM: random nonce ‖ ciphertext ‖ tag.
///
/// # Errors
///
/// The system random source failed.
pub fn seal(key: &[u8; KEY_LEN], plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, KeyError> {
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| KeyError::Random)?;
    let sealing =
        LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).map_err(|_| KeyError::Random)?);
    let mut buffer = plaintext.to_vec();
    sealing
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut buffer,
        )
        .map_err(|_| KeyError::Random)?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&buffer);
    Ok(out)
}

/// Opens a [`seal`] output; `None` when the key, the AAD or the bytes are wrong.
pub fn open(key: &[u8; KEY_LEN], sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let opening = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).ok()?);
    let mut buffer = body.to_vec();
    let plain = opening
        .open_in_place(nonce, Aad::from(aad), &mut buffer)
        .ok()?;
    Some(plain.to_vec())
}

/// Wraps a grant key under a token's wrapping key (AAD: the grant id).
///
/// # Errors
///
/// The system random source failed.
pub fn wrap_grant_key(
    token: &str,
    grant_id: &str,
    grant_key: &[u8; KEY_LEN],
) -> Result<Vec<u8>, KeyError> {
    seal(&wrapping_key(token), grant_key, grant_id.as_bytes())
}

/// Unwraps a grant key with the token it was wrapped for.
pub fn unwrap_grant_key(token: &str, grant_id: &str, wrapped: &[u8]) -> Option<[u8; KEY_LEN]> {
    let plain = open(&wrapping_key(token), wrapped, grant_id.as_bytes())?;
    plain.try_into().ok()
}

/// The PKCE S256 challenge of a verifier (RFC 7636).
pub fn s256_challenge(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// Constant-time equality of two byte strings.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq as _;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> ServerKeys {
        ServerKeys::from_bytes(&[7u8; 32])
    }

    #[test]
    fn short_or_malformed_secrets_are_refused() {
        assert!(ServerKeys::from_secret("c2hvcnQ").is_err());
        assert!(ServerKeys::from_secret("not base64 at all!!").is_err());
        let good = URL_SAFE_NO_PAD.encode([1u8; 32]);
        assert!(ServerKeys::from_secret(&good).is_ok());
    }

    #[test]
    fn tokens_are_random_and_hashes_keyed() {
        let k = keys();
        let a = k.new_token("tfa_").expect("random");
        let b = k.new_token("tfa_").expect("random");
        assert_ne!(a, b);
        assert!(a.len() >= 4 + 43);
        assert_eq!(k.hash(&a), k.hash(&a));
        assert_ne!(k.hash(&a), ServerKeys::from_bytes(&[8u8; 32]).hash(&a));
    }

    #[test]
    fn signatures_bind_purpose_and_value() {
        let k = keys();
        let s = k.sign("csrf", "abc");
        assert_eq!(k.verify("csrf", &s), Some("abc"));
        assert_eq!(k.verify("cookie", &s), None);
        let tampered = s.replacen("abc", "abd", 1);
        assert_eq!(k.verify("csrf", &tampered), None);
        assert_eq!(k.verify("csrf", "abc"), None);
    }

    #[test]
    fn sealed_grant_keys_open_only_with_their_token_and_grant() {
        let k = keys();
        let grant_key = k.random_key().expect("random");
        let wrapped = wrap_grant_key("token-1", "g1", &grant_key).expect("seal");
        assert_eq!(unwrap_grant_key("token-1", "g1", &wrapped), Some(grant_key));
        assert_eq!(unwrap_grant_key("token-2", "g1", &wrapped), None);
        assert_eq!(unwrap_grant_key("token-1", "g2", &wrapped), None);
        let mut flipped = wrapped.clone();
        if let Some(last) = flipped.last_mut() {
            *last ^= 1;
        }
        assert_eq!(unwrap_grant_key("token-1", "g1", &flipped), None);
    }

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
