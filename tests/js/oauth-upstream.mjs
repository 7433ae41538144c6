// A real upstream OAuth provider and an API mock behind it, for the OAuth
// end-to-end tests (tests/src/oauth.rs starts it, one process per test).
//
// (a) `oidc-provider` (a certified OpenID provider) on 127.0.0.1:0: the
//     authorization code flow with PKCE (required), refresh tokens
//     (`offline_access`; rotated or not), the `api:read` / `api:write` scopes,
//     token introspection and revocation, and a minimal real interaction
//     flow (a login page that checks a password, then a consent page) with
//     no outside resources, so a browser loads nothing beyond loopback.
// (b) An API mock on another 127.0.0.1:0 port serving the Cloudflare-sample
//     endpoints the tests call. It accepts only access tokens that provider
//     issued (looked up in the provider itself: unknown, expired or revoked
//     tokens are 401) and answers 403 when the scope needed (api:read for
//     GET, api:write otherwise) is missing. Each request is recorded (method,
//     path, the token's client, subject, scope and a short SHA-256
//     fingerprint: never a token value) for the test to read at
//     GET /__admin/requests.
//
// Admin endpoints on the API port (loopback only, JSON):
//   POST /__admin/client {client_id, client_secret, redirect_uris}  register (upsert) a client
//   GET  /__admin/requests                                       the recorded API requests
//   GET  /__admin/events                                         token endpoint counts by grant type, revocations
//   GET  /__admin/token?fp=FP                                    {known, expired} of an access token by fingerprint
//   POST /__admin/revoke {sub}                                   revokes every grant (and token) of a user
//
// Options: --access-ttl SECS (default 3600), --rotate-refresh (default off),
// --password PW (the login password; default "wonderland"), --withhold-once
// SCOPE (the first consent grants every asked scope but SCOPE, as a user
// unticking it; each consent then makes a fresh grant of what it allows).
// When ready it prints one JSON line on stdout:
//   {"issuer", "authorize_url", "token_url", "revoke_url", "introspection_url", "api", "admin"}

import crypto from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
import Provider from 'oidc-provider';

const { values: opts } = parseArgs({
  options: {
    'access-ttl': { type: 'string', default: '3600' },
    'rotate-refresh': { type: 'boolean', default: false },
    password: { type: 'string', default: 'wonderland' },
    'withhold-once': { type: 'string' },
  },
});
// The scope the user unticks at the first consent (a grant of fewer scopes
// than asked); later consents grant everything asked.
let withhold = opts['withhold-once'];
const ACCESS_TTL = Number(opts['access-ttl']);
if (!Number.isInteger(ACCESS_TTL) || ACCESS_TTL < 1) {
  throw new Error(`--access-ttl must be a positive integer, not ${opts['access-ttl']}`);
}
const PASSWORD = opts.password;

/** Short fingerprint of a secret, for logs and records (never the secret). */
const fingerprint = (secret) => crypto.createHash('sha256').update(secret).digest('hex').slice(0, 16);

const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

async function readBody(req, limit = 1 << 20) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) throw new Error('body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/html; charset=utf-8' : 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

// --- (a) the provider -------------------------------------------------------

const providerServer = http.createServer();
const providerPort = await listen(providerServer);
const issuer = `http://127.0.0.1:${providerPort}`;

/** Access tokens issued: fingerprint → {exp, accountId, grantId}. */
const issued = new Map();
/** Grants by account: accountId → Set(grantId). */
const grantsOf = new Map();
const events = { authorization_code: 0, refresh_token: 0, revocations: 0, grant_revoked: 0, errors: [] };

const provider = new Provider(issuer, {
  clients: [],
  scopes: ['openid', 'offline_access', 'api:read', 'api:write'],
  claims: { openid: ['sub'] },
  features: {
    devInteractions: { enabled: false },
    introspection: { enabled: true },
    revocation: { enabled: true },
  },
  pkce: { required: () => true },
  rotateRefreshToken: opts['rotate-refresh'],
  issueRefreshToken: async (_ctx, client, source) =>
    client.grantTypeAllowed('refresh_token') && source.scopes.has('offline_access'),
  ttl: {
    AccessToken: ACCESS_TTL,
    AuthorizationCode: 60,
    Grant: 86400,
    IdToken: 3600,
    Interaction: 600,
    RefreshToken: 86400,
    Session: 86400,
  },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});

// Diagnostics on stderr (the test shows them on failure): what was asked
// for at /auth, and each token endpoint outcome. No token or code values.
provider.use(async (ctx, next) => {
  if (ctx.path === '/auth' && ctx.method === 'GET' && ctx.query.client_id) {
    console.error(`upstream /auth client_id=${ctx.query.client_id} scope=${JSON.stringify(ctx.query.scope)} prompt=${JSON.stringify(ctx.query.prompt)} code_challenge_method=${ctx.query.code_challenge_method}`);
  }
  await next();
  if (ctx.path === '/token') {
    const body = ctx.body && typeof ctx.body === 'object' ? ctx.body : {};
    console.error(`upstream /token grant_type=${ctx.oidc?.params?.grant_type} status=${ctx.status} scope=${JSON.stringify(body.scope)} refresh_token=${'refresh_token' in body ? 'issued' : 'none'} error=${body.error || ''}`);
  }
});

provider.on('access_token.saved', (token) => {
  issued.set(fingerprint(token.jti), { exp: token.exp || Math.floor(Date.now() / 1000) + token.remainingTTL, accountId: token.accountId, grantId: token.grantId });
});
provider.on('grant.saved', (grant) => {
  if (!grantsOf.has(grant.accountId)) grantsOf.set(grant.accountId, new Set());
  grantsOf.get(grant.accountId).add(grant.jti);
});
provider.on('grant.success', (ctx) => {
  const type = ctx.oidc.params.grant_type;
  if (type in events) events[type] += 1;
});
provider.on('grant.error', (ctx, error) => {
  events.errors.push({ grant_type: ctx.oidc.params?.grant_type, error: error.error, description: error.error_description });
});
provider.on('revocation.success', () => { events.revocations += 1; });
provider.on('grant.revoked', () => { events.grant_revoked += 1; });

function page(title, body) {
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>`
    + `<body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return send(res, 400, page('Error', '<p>interaction mismatch</p>'));
  const { prompt, params, session } = details;
  if (req.method === 'GET') {
    if (prompt.name === 'login') {
      return send(res, 200, page('Test Provider sign-in', `
<form method="post" action="/interaction/${escapeHtml(uid)}/login" autocomplete="off">
  <p>Client: <span id="client">${escapeHtml(params.client_id)}</span></p>
  <label>Login <input id="login" type="text" name="login" required autofocus></label>
  <label>Password <input id="password" type="password" name="password" required></label>
  <button id="sign-in" type="submit">Sign in</button>
</form>`));
    }
    const scopes = (prompt.details.missingOIDCScope || []).map((s) => `<li>${escapeHtml(s)}</li>`).join('');
    return send(res, 200, page('Test Provider consent', `
<p>Allow <span id="client">${escapeHtml(params.client_id)}</span> access for ${escapeHtml(session?.accountId)}?</p>
<ul id="scopes">${scopes}</ul>
<form method="post" action="/interaction/${escapeHtml(uid)}/confirm">
  <button id="continue" type="submit">Continue</button>
</form>`));
  }
  const form = new URLSearchParams(await readBody(req));
  if (action === 'login' && prompt.name === 'login') {
    const login = form.get('login') || '';
    if (!login || form.get('password') !== PASSWORD) {
      return send(res, 200, page('Test Provider sign-in', `<p id="error">Wrong login or password.</p>
<form method="post" action="/interaction/${escapeHtml(uid)}/login" autocomplete="off">
  <label>Login <input id="login" type="text" name="login" required autofocus></label>
  <label>Password <input id="password" type="password" name="password" required></label>
  <button id="sign-in" type="submit">Sign in</button>
</form>`));
    }
    return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
  }
  if (action === 'confirm' && prompt.name === 'consent' && opts['withhold-once']) {
    const asked = String(params.scope || '').split(' ').filter(Boolean);
    const grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (withhold && asked.includes(withhold)) {
      console.error(`upstream consent: the user unticked ${withhold}`);
      grant.rejectOIDCScope(withhold);
      withhold = undefined;
    }
    const rejected = grant.getRejectedOIDCScope().split(' ');
    grant.addOIDCScope(asked.filter((s) => !rejected.includes(s)).join(' '));
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  if (action === 'confirm' && prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    const consent = details.grantId ? {} : { grantId };
    return provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
  }
  return send(res, 400, page('Error', `<p>unexpected ${escapeHtml(action)} for prompt ${escapeHtml(prompt.name)}</p>`));
}

const providerCallback = provider.callback();
providerServer.on('request', (req, res) => {
  const m = /^\/interaction\/([A-Za-z0-9_-]+)(?:\/(login|confirm))?$/.exec(req.url.split('?')[0]);
  if (!m) return providerCallback(req, res);
  interaction(req, res, m[1], m[2]).catch((error) => {
    console.error(`interaction failed: ${error?.message}`);
    if (!res.headersSent) send(res, 500, page('Error', `<p>${escapeHtml(error?.message)}</p>`));
  });
});

// --- (b) the API mock and the admin endpoints -----------------------------

const requests = [];

/** The provider's view of a bearer token: null when it is not a valid one. */
async function lookup(token) {
  const at = await provider.AccessToken.find(token);
  if (!at || at.isExpired) return null;
  if (at.grantId && !(await provider.Grant.find(at.grantId))) return null;
  return at;
}

const ZONE = { id: '023e105f4ecef8ad9ca31a8372d0c353', name: 'example.com', status: 'active', paused: false, type: 'full' };
const envelope = (result, extra = {}) => ({ success: true, errors: [], messages: [], result, ...extra });
const cfError = (code, message) => ({ success: false, errors: [{ code, message }], messages: [], result: null });

async function api(req, res, url) {
  const record = { method: req.method, path: url.pathname, query: url.search, status: 0, token: null };
  requests.push(record);
  const body = await readBody(req);
  const header = req.headers.authorization || '';
  const m = /^Bearer ([^\s]+)$/.exec(header);
  const at = m ? await lookup(m[1]) : null;
  if (!at) {
    record.status = 401;
    record.auth = m ? 'unknown, expired or revoked token' : 'no bearer token';
    return send(res, 401, cfError(10000, 'Authentication error'), { 'www-authenticate': 'Bearer error="invalid_token"' });
  }
  const scopes = new Set((at.scope || '').split(' ').filter(Boolean));
  record.token = { client_id: at.clientId, sub: at.accountId, scope: at.scope || '', fp: fingerprint(m[1]), grant: fingerprint(at.grantId || '') };
  const needed = req.method === 'GET' ? 'api:read' : 'api:write';
  if (!scopes.has(needed)) {
    record.status = 403;
    record.auth = `missing scope ${needed}`;
    return send(res, 403, cfError(9109, `Unauthorized: ${needed} is required`));
  }
  let reply;
  if (req.method === 'GET' && url.pathname === '/zones') {
    reply = envelope([ZONE], { result_info: { page: 1, per_page: 20, count: 1, total_count: 1, total_pages: 1 } });
  } else if (req.method === 'POST' && /^\/zones\/[0-9a-f]{32}\/dns_records$/.test(url.pathname)) {
    let input = {};
    try { input = JSON.parse(body || '{}'); } catch { /* answered as given */ }
    reply = envelope({ id: '372e67954025e0ba6aaa6d586b9e0b59', zone_id: url.pathname.split('/')[2], zone_name: 'example.com', ...input });
  } else if (req.method === 'GET' && url.pathname === '/accounts') {
    reply = envelope([{ id: '01a7362d577a6c3019a474fd6f485823', name: 'Test account' }]);
  } else if (req.method === 'GET' && url.pathname === '/accounts/01a7362d577a6c3019a474fd6f485823') {
    reply = envelope({ id: '01a7362d577a6c3019a474fd6f485823', name: 'Test account' });
  } else {
    record.status = 404;
    return send(res, 404, cfError(7003, 'No route for that URI'));
  }
  record.status = 200;
  return send(res, 200, reply);
}

async function admin(req, res, url) {
  const route = `${req.method} ${url.pathname}`;
  if (route === 'POST /__admin/client') {
    const input = JSON.parse(await readBody(req));
    const metadata = {
      client_id: input.client_id,
      client_secret: input.client_secret,
      redirect_uris: input.redirect_uris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: input.token_endpoint_auth_method || 'client_secret_basic',
      scope: 'openid offline_access api:read api:write',
    };
    await provider.Client.adapter.upsert(metadata.client_id, metadata);
    const client = await provider.Client.find(metadata.client_id);
    if (!client) return send(res, 500, { error: 'client not stored' });
    return send(res, 200, { client_id: client.clientId, redirect_uris: client.redirectUris });
  }
  if (route === 'GET /__admin/requests') return send(res, 200, { requests });
  if (route === 'GET /__admin/events') return send(res, 200, events);
  if (route === 'GET /__admin/token') {
    const entry = issued.get(url.searchParams.get('fp') || '');
    const now = Math.floor(Date.now() / 1000);
    return send(res, 200, entry ? { known: true, expired: entry.exp <= now, exp: entry.exp, now } : { known: false });
  }
  if (route === 'POST /__admin/revoke') {
    const { sub } = JSON.parse(await readBody(req));
    const grants = [...(grantsOf.get(sub) || [])];
    for (const grantId of grants) {
      await Promise.all([provider.AccessToken, provider.RefreshToken, provider.AuthorizationCode]
        .map((model) => model.revokeByGrantId(grantId)));
      await provider.Grant.adapter.destroy(grantId);
    }
    grantsOf.delete(sub);
    return send(res, 200, { revoked_grants: grants.length });
  }
  return send(res, 404, { error: `no admin route ${route}` });
}

const apiServer = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  const handler = url.pathname.startsWith('/__admin/') ? admin : api;
  handler(req, res, url).catch((error) => {
    console.error(`api mock: ${req.method} ${url.pathname} failed: ${error?.message}`);
    if (!res.headersSent) send(res, 500, { error: String(error?.message) });
  });
});
const apiPort = await listen(apiServer);

const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
console.log(JSON.stringify({
  issuer,
  authorize_url: discovery.authorization_endpoint,
  token_url: discovery.token_endpoint,
  revoke_url: discovery.revocation_endpoint,
  introspection_url: discovery.introspection_endpoint,
  api: `http://127.0.0.1:${apiPort}`,
  admin: `http://127.0.0.1:${apiPort}/__admin`,
}));

const stop = () => { providerServer.close(); apiServer.close(); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// The test closes our stdin when it is done (or dies): stop then too.
process.stdin.on('end', stop);
process.stdin.resume();
