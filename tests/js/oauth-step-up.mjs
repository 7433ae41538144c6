// Step-up with the official TypeScript SDK client (its
// StreamableHTTPClientTransport answers a 403 `insufficient_scope` by
// authorizing again with the challenge's scope, then retrying).
//
// Line protocol (see tests/src/oauth_driver.rs):
//   stdin  1st line: plan {url, redirectUrl, call: {name, arguments}, keepRefresh?}
//   stdout {"authorize": URL} → stdin {"redirect": FINAL_URL}   (twice)
//   stdout {"report": {...}} at the end, or {"fatal": "..."}.
// Nothing secret is reported.

import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

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
const errorOf = (e) => ({ name: e?.constructor?.name, message: String(e?.message ?? e) });

class Provider {
  constructor(redirectUrl, keepRefresh) { this._redirectUrl = redirectUrl; this._keepRefresh = keepRefresh; this.pending = undefined; }
  get redirectUrl() { return this._redirectUrl; }
  get clientMetadata() {
    return { client_name: 'toolforge e2e step-up', redirect_uris: [this._redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() { return 'state-step-up'; }
  clientInformation() { return this._client; }
  saveClientInformation(info) { this._client = info; }
  tokens() { return this._tokens; }
  // With `keepRefresh` the refresh token is kept, as a real client does:
  // this SDK version refreshes before it re-authorizes, even on
  // `insufficient_scope`, and the server answers that refresh
  // `invalid_grant` while the step-up is pending. Without it, none is kept.
  saveTokens(tokens) {
    if (this._keepRefresh) { this._tokens = tokens; return; }
    const { refresh_token: _dropped, ...rest } = tokens;
    this._tokens = rest;
  }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'client') this._client = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
  }
  saveCodeVerifier(verifier) { this._verifier = verifier; }
  codeVerifier() { return this._verifier; }
  redirectToAuthorization(url) { this.pending = url.toString(); }
}

/// Has the browser sign in at the pending URL and finishes with the code.
async function signIn(provider, transport) {
  const url = provider.pending;
  provider.pending = undefined;
  say({ authorize: url });
  const { redirect } = await nextLine();
  const code = new URL(redirect).searchParams.get('code');
  if (!code) throw new Error(`no code in ${redirect}`);
  await transport.finishAuth(code);
  return new URL(url).searchParams.get('scope');
}

/// Token-endpoint exchanges seen by the client: the grant type, the
/// status, the error and the granted scope (no token values).
const tokenCalls = [];
async function loggingFetch(input, init) {
  const response = await fetch(input, init);
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  if (url.pathname === '/token') {
    const sent = new URLSearchParams(typeof init?.body === 'string' ? init.body : init?.body?.toString() ?? '');
    const body = await response.clone().json().catch(() => ({}));
    tokenCalls.push({ grant_type: sent.get('grant_type'), status: response.status, error: body.error ?? null, error_description: body.error_description ?? null, scope: body.scope ?? null });
  }
  return response;
}

async function main() {
  const plan = await nextLine();
  const serverUrl = new URL(plan.url);
  const provider = new Provider(plan.redirectUrl, !!plan.keepRefresh);
  const report = { steps: [], tokenCalls };
  const step = (name, data) => report.steps.push({ step: name, ...data });
  const options = { authProvider: provider, fetch: loggingFetch };

  let transport = new StreamableHTTPClientTransport(serverUrl, options);
  let client = new Client({ name: 'toolforge-e2e-step-up', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  step('first-sign-in', { scope: await signIn(provider, transport), token_scope: provider.tokens()?.scope ?? null });

  step('refresh-held', { held: !!provider.tokens()?.refresh_token });
  transport = new StreamableHTTPClientTransport(serverUrl, options);
  client = new Client({ name: 'toolforge-e2e-step-up', version: '1.0.0' });
  await client.connect(transport);
  const callOnce = async () => {
    const result = await client.callTool(plan.call);
    return { isError: !!result.isError, text: (result.content ?? []).map((c) => c.text ?? '').join('\n').slice(0, 1500) };
  };
  try {
    step('call', await callOnce());
  } catch (e) {
    // The transport asked to authorize again with the challenge's scope.
    step('challenged', { error: errorOf(e), unauthorized: e instanceof UnauthorizedError, pending: !!provider.pending });
    if (!provider.pending) throw e;
    step('second-sign-in', { scope: await signIn(provider, transport), token_scope: provider.tokens()?.scope ?? null });
    step('retry', await callOnce());
  }
  await client.close().catch(() => {});
  say({ report });
}

main().then(() => process.exit(0), (e) => {
  say({ fatal: `${e?.constructor?.name}: ${e?.message ?? e}` });
  process.exit(1);
});
