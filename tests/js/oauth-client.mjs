// The official TypeScript MCP SDK client signing in to an `--auth oauth`
// server with its own OAuthClientProvider (dynamic client registration,
// PKCE S256, RFC 8707 resource), driven by tests/src/oauth.rs over a line
// protocol (JSON lines):
//
//   stdin  1st line: plan {url, redirectUrl, calls: [{name, arguments}], afterRefreshCall: {name, arguments}}
//   stdout {"authorize": URL}       the test signs in (a browser) and answers
//   stdin  {"redirect": FINAL_URL}  the client's redirect URI with code, state, iss
//   stdout {"pause": "upstream-expiry"}  the test waits for the upstream token to expire, answers
//   stdin  {"continue": true}
//   stdout {"report": {...}}        last line; or {"fatal": "..."} (exit 1)
//
// Flow: connect (401 → discovery → registration → authorization) → the
// redirect's state and iss are checked → finishAuth → connect → tools/list
// → each call → pause → a forced refresh (auth() with the stored refresh
// token) → one more call → RFC 7009 revocation of the refresh and access
// tokens → a raw POST /mcp with the revoked access token (expect 401 and
// WWW-Authenticate) → one more SDK call (must fail; the SDK asks to sign in
// again). Token values never leave this process: the report holds
// booleans and SHA-256 fingerprints.

import crypto from 'node:crypto';
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  auth,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js';

const lines = readline.createInterface({ input: process.stdin });
const queue = [];
const waiters = [];
lines.on('line', (line) => {
  if (!line.trim()) return;
  const value = JSON.parse(line);
  const waiter = waiters.shift();
  if (waiter) waiter(value); else queue.push(value);
});
const nextLine = () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiters.push(resolve)));
const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
const fp = (secret) => (secret ? crypto.createHash('sha256').update(secret).digest('hex').slice(0, 16) : null);
const errorOf = (e) => ({ name: e?.constructor?.name, message: String(e?.message ?? e) });

class TestProvider {
  constructor(redirectUrl) {
    this._redirectUrl = redirectUrl;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this._state = undefined;
    this.pendingAuthorization = undefined;
    this.redirects = 0;
    this.allowRedirect = true;
    this.refusedRedirects = 0;
  }
  get redirectUrl() { return this._redirectUrl; }
  get clientMetadata() {
    return {
      client_name: 'toolforge e2e (TypeScript SDK)',
      redirect_uris: [this._redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() { this._state = crypto.randomBytes(16).toString('base64url'); return this._state; }
  clientInformation() { return this._client; }
  saveClientInformation(info) { this._client = info; }
  tokens() { return this._tokens; }
  saveTokens(tokens) { this._tokens = tokens; }
  saveCodeVerifier(verifier) { this._verifier = verifier; }
  codeVerifier() { return this._verifier; }
  redirectToAuthorization(url) {
    if (!this.allowRedirect) { this.refusedRedirects += 1; return; }
    this.redirects += 1;
    this.pendingAuthorization = url.toString();
  }
}

async function main() {
  const plan = await nextLine();
  const serverUrl = new URL(plan.url);
  const provider = new TestProvider(plan.redirectUrl);
  const report = { steps: [] };
  const step = (name, data) => report.steps.push({ step: name, ...data });

  // Discovery, as the SDK does it (recorded for the test's assertions).
  const prm = await discoverOAuthProtectedResourceMetadata(serverUrl);
  const asUrl = prm.authorization_servers?.[0];
  const asm = await discoverAuthorizationServerMetadata(asUrl);
  report.metadata = { resource: prm.resource, authorization_servers: prm.authorization_servers, as: asm };

  // 1. Connect without a token: 401 → the SDK registers and asks us to authorize.
  let transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
  let client = new Client({ name: 'toolforge-e2e-oauth-ts', version: '1.0.0' });
  try {
    await client.connect(transport);
    throw new Error('connect succeeded without authorization');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  step('registered', { client_id_issued: !!provider.clientInformation()?.client_id, has_secret: !!provider.clientInformation()?.client_secret });
  if (!provider.pendingAuthorization) throw new Error('the SDK did not ask for authorization');
  const authorizeUrl = new URL(provider.pendingAuthorization);
  step('authorize', {
    endpoint: `${authorizeUrl.origin}${authorizeUrl.pathname}`,
    code_challenge_method: authorizeUrl.searchParams.get('code_challenge_method'),
    has_code_challenge: !!authorizeUrl.searchParams.get('code_challenge'),
    resource: authorizeUrl.searchParams.get('resource'),
    has_state: !!authorizeUrl.searchParams.get('state'),
  });
  say({ authorize: provider.pendingAuthorization });
  const { redirect } = await nextLine();
  const back = new URL(redirect);
  const code = back.searchParams.get('code');
  step('redirect', {
    to: `${back.origin}${back.pathname}`,
    has_code: !!code,
    state_matches: back.searchParams.get('state') === provider._state,
    iss: back.searchParams.get('iss'),
    iss_matches: back.searchParams.get('iss') === asm.issuer,
    error: back.searchParams.get('error'),
  });
  if (!code) throw new Error(`no code in the redirect (error: ${back.searchParams.get('error')})`);
  await transport.finishAuth(code);
  const first = provider.tokens();
  step('tokens', {
    token_type: first?.token_type,
    has_access: !!first?.access_token,
    has_refresh: !!first?.refresh_token,
    expires_in: first?.expires_in,
    scope: first?.scope,
    access_fp: fp(first?.access_token),
  });

  // 2. Connect with the token, list, call.
  transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider });
  client = new Client({ name: 'toolforge-e2e-oauth-ts', version: '1.0.0' });
  await client.connect(transport);
  report.protocolVersion = transport.protocolVersion;
  const listed = await client.listTools();
  step('list', { tools: listed.tools.map((t) => t.name) });
  const call = async (label, { name, arguments: args }) => {
    try {
      const result = await client.callTool({ name, arguments: args });
      step(label, { name, isError: !!result.isError, structured: result.structuredContent ?? null, text: (result.content ?? []).map((c) => c.text ?? '').join('\n').slice(0, 2000) });
    } catch (e) {
      step(label, { name, error: errorOf(e) });
    }
  };
  for (const c of plan.calls) await call('call', c);

  // 3. Let the upstream token expire (the test waits), then force a refresh.
  say({ pause: 'upstream-expiry' });
  await nextLine();
  const before = provider.tokens();
  const refreshed = await auth(provider, { serverUrl });
  const after = provider.tokens();
  step('refresh', {
    result: refreshed,
    access_changed: !!after?.access_token && after.access_token !== before.access_token,
    refresh_changed: !!after?.refresh_token && after.refresh_token !== before.refresh_token,
    has_refresh: !!after?.refresh_token,
    access_fp: fp(after?.access_token),
  });
  await call('call-after-refresh', plan.afterRefreshCall);

  // 4. Revoke (RFC 7009): the refresh token, then the access token.
  const tokens = provider.tokens();
  const info = provider.clientInformation();
  const revoke = async (token, hint) => {
    const body = new URLSearchParams({ token, token_type_hint: hint, client_id: info.client_id });
    const res = await fetch(asm.revocation_endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    return res.status;
  };
  step('revoke', {
    endpoint: asm.revocation_endpoint,
    refresh_status: await revoke(tokens.refresh_token, 'refresh_token'),
    access_status: await revoke(tokens.access_token, 'access_token'),
  });
  const raw = await fetch(serverUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${tokens.access_token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  step('after-revoke-raw', { status: raw.status, www_authenticate: raw.headers.get('www-authenticate') });
  provider.allowRedirect = false;
  try {
    const result = await client.callTool(plan.afterRefreshCall);
    step('after-revoke-call', { refused: false, isError: !!result.isError });
  } catch (e) {
    step('after-revoke-call', { refused: true, unauthorized: e instanceof UnauthorizedError, error: errorOf(e), asked_to_sign_in_again: provider.refusedRedirects > 0 });
  }
  await client.close().catch(() => {});
  say({ report });
}

main().then(() => process.exit(0), (e) => {
  say({ fatal: `${e?.constructor?.name}: ${e?.message ?? e}` });
  process.exit(1);
});
