"""The Python ``mcp`` client signing in to an ``--auth oauth`` server with its OAuth support.

``mcp.client.auth.OAuthClientProvider`` (an ``httpx2.Auth``) on the HTTP client of
``mcp.Client``: protected-resource and authorization-server discovery, dynamic client
registration, PKCE S256, the RFC 8707 resource, RFC 9207 ``iss`` validation, refresh.
Driven by tests/src/oauth.rs over JSON lines, the same protocol as tests/js/oauth-client.mjs:

    stdin  1st line: plan {url, redirectUrl, calls: [{name, arguments}], afterRefreshCall: {...}}
    stdout {"authorize": URL}            (from redirect_handler) the test signs in
    stdin  {"redirect": FINAL_URL}       (read by callback_handler)
    stdout {"pause": "upstream-expiry"}  the test waits for the upstream token to expire
    stdin  {"continue": true}
    stdout {"report": {...}}             last line; or {"fatal": "..."} (exit 1)

The refresh is forced by marking the held access token expired in the provider's context
(``context.token_expiry_time``), so the SDK's own refresh path runs before the next request.
Token values never leave this process: the report holds booleans and SHA-256 fingerprints.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import traceback
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


def say(value: Any) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def next_line() -> Any:
    while True:
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line:
            raise EOFError("stdin closed")
        if line.strip():
            return json.loads(line)


def fp(secret: str | None) -> str | None:
    return hashlib.sha256(secret.encode()).hexdigest()[:16] if secret else None


def describe(e: BaseException) -> dict[str, Any]:
    if isinstance(e, BaseExceptionGroup):
        return {"name": type(e).__name__, "message": "; ".join(describe(x)["message"] for x in e.exceptions)}
    return {"name": type(e).__name__, "message": str(e)}


class SignInAgain(Exception):
    """Raised by the redirect handler once sign-in is no longer expected."""


class Storage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


async def drive(plan: dict[str, Any], report: dict[str, Any]) -> None:
    steps: list[dict[str, Any]] = report["steps"]
    storage = Storage()
    state = {"allow_redirect": True, "refused_redirects": 0, "redirects": 0, "sent_state": None}

    async def redirect_handler(url: str) -> None:
        if not state["allow_redirect"]:
            state["refused_redirects"] += 1
            raise SignInAgain("the client was asked to sign in again")
        state["redirects"] += 1
        query = parse_qs(urlparse(url).query)
        state["sent_state"] = query.get("state", [None])[0]
        steps.append({
            "step": "authorize",
            "endpoint": url.split("?")[0],
            "code_challenge_method": query.get("code_challenge_method", [None])[0],
            "has_code_challenge": bool(query.get("code_challenge")),
            "resource": query.get("resource", [None])[0],
            "has_state": bool(query.get("state")),
        })
        say({"authorize": url})

    async def callback_handler() -> AuthorizationCodeResult:
        message = await next_line()
        back = urlparse(message["redirect"])
        query = parse_qs(back.query)
        one = lambda k: query.get(k, [None])[0]  # noqa: E731
        steps.append({
            "step": "redirect",
            "to": f"{back.scheme}://{back.netloc}{back.path}",
            "has_code": bool(one("code")),
            "state_matches": one("state") == state["sent_state"],
            "iss": one("iss"),
            "error": one("error"),
        })
        if not one("code"):
            raise RuntimeError(f"no code in the redirect (error: {one('error')})")
        return AuthorizationCodeResult(code=one("code"), state=one("state"), iss=one("iss"))

    oauth = OAuthClientProvider(
        server_url=plan["url"],
        client_metadata=OAuthClientMetadata(
            client_name="toolforge e2e (Python mcp)",
            redirect_uris=[plan["redirectUrl"]],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    try:
        await session(plan, report, oauth, storage, state)
    except BaseException as e:  # noqa: BLE001
        # After the refused call the client's task group ends with the
        # refusal (the SDK asked to sign in again); that is the expected end.
        if not state.get("refused_after_revoke"):
            raise
        report["teardown"] = describe(e)


async def session(plan: dict[str, Any], report: dict[str, Any], oauth: OAuthClientProvider,
                  storage: Storage, state: dict[str, Any]) -> None:
    steps: list[dict[str, Any]] = report["steps"]
    timeout = httpx2.Timeout(60.0)
    async with httpx2.AsyncClient(auth=oauth, timeout=timeout) as http:
        async with Client(streamable_http_client(plan["url"], http_client=http), mode="auto", read_timeout_seconds=60) as client:
            report["protocolVersion"] = client.protocol_version
            tokens = storage.tokens
            info = storage.client_info
            steps.append({"step": "registered", "client_id_issued": bool(info and info.client_id)})
            steps.append({
                "step": "tokens",
                "token_type": tokens.token_type if tokens else None,
                "has_access": bool(tokens and tokens.access_token),
                "has_refresh": bool(tokens and tokens.refresh_token),
                "expires_in": tokens.expires_in if tokens else None,
                "scope": tokens.scope if tokens else None,
                "access_fp": fp(tokens.access_token if tokens else None),
            })
            asm = oauth.context.oauth_metadata
            report["metadata"] = {"as": asm.model_dump(mode="json", exclude_none=True) if asm else None}
            listed = await client.list_tools()
            steps.append({"step": "list", "tools": [t.name for t in listed.tools]})

            async def call(label: str, c: dict[str, Any]) -> None:
                try:
                    result = await client.call_tool(c["name"], c.get("arguments", {}))
                    text = "\n".join(getattr(x, "text", "") for x in result.content)[:2000]
                    steps.append({"step": label, "name": c["name"], "isError": bool(result.is_error),
                                  "structured": result.structured_content, "text": text})
                except Exception as e:  # noqa: BLE001 - reported
                    steps.append({"step": label, "name": c["name"], "error": describe(e)})

            for c in plan["calls"]:
                await call("call", c)

            say({"pause": "upstream-expiry"})
            await next_line()
            before = storage.tokens
            # The SDK refreshes before a request when the held token has expired.
            oauth.context.token_expiry_time = time.time() - 1
            await call("call-after-refresh", plan["afterRefreshCall"])
            after = storage.tokens
            steps.append({
                "step": "refresh",
                "access_changed": bool(after and before and after.access_token != before.access_token),
                "refresh_changed": bool(after and before and after.refresh_token != before.refresh_token),
                "has_refresh": bool(after and after.refresh_token),
                "access_fp": fp(after.access_token if after else None),
            })
            # Keep the refresh step before the call it preceded, as the TypeScript report does.
            refresh = steps.pop()
            steps.insert(len(steps) - 1, refresh)

            revocation = str(asm.revocation_endpoint) if asm and asm.revocation_endpoint else None
            tokens = storage.tokens
            client_id = storage.client_info.client_id if storage.client_info else ""
            statuses: dict[str, Any] = {"endpoint": revocation}
            async with httpx2.AsyncClient(timeout=timeout) as raw:
                for hint, token in (("refresh_token", tokens.refresh_token), ("access_token", tokens.access_token)):
                    if revocation is None or token is None:
                        statuses[f"{hint.split('_')[0]}_status"] = None
                        continue
                    r = await raw.post(revocation, data={"token": token, "token_type_hint": hint, "client_id": client_id})
                    statuses[f"{hint.split('_')[0]}_status"] = r.status_code
                steps.append({"step": "revoke", **statuses})
                r = await raw.post(
                    plan["url"],
                    headers={"Authorization": f"Bearer {tokens.access_token}", "Accept": "application/json, text/event-stream"},
                    json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
                )
                steps.append({"step": "after-revoke-raw", "status": r.status_code,
                              "www_authenticate": r.headers.get("www-authenticate")})
            state["allow_redirect"] = False
            try:
                result = await client.call_tool(plan["afterRefreshCall"]["name"], plan["afterRefreshCall"].get("arguments", {}))
                steps.append({"step": "after-revoke-call", "refused": False, "isError": bool(result.is_error)})
            except BaseException as e:  # noqa: BLE001 - the refusal is what is tested
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                steps.append({"step": "after-revoke-call", "refused": True, "error": describe(e),
                              "asked_to_sign_in_again": state["refused_redirects"] > 0})
                state["refused_after_revoke"] = True


def main() -> int:
    report: dict[str, Any] = {"steps": []}
    try:
        async def bounded() -> None:
            plan = await next_line()
            with anyio.fail_after(float(plan.get("timeoutSeconds", 240))):
                await drive(plan, report)

        anyio.run(bounded)
    except BaseException as e:  # noqa: BLE001 - reported, not raised
        traceback.print_exc(file=sys.stderr)
        say({"fatal": describe(e)["message"], "steps": report["steps"]})
        return 1
    say({"report": report})
    return 0


if __name__ == "__main__":
    sys.exit(main())
