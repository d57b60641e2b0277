// The TypeScript SDK v1 client's OAuth login: @modelcontextprotocol/sdk with
// an OAuthClientProvider as the StreamableHTTPClientTransport's
// authProvider. Usage: node oauth.mjs <mcp url> <case>, with the user's
// login in CLIENTMATRIX_OAUTH_USER and CLIENTMATRIX_OAUTH_PASSWORD.
//
// The first connect gets 401; the SDK discovers the protected-resource and
// authorization-server metadata, registers a client (RFC 7591) and sends
// the provider to the authorization URL (PKCE, resource indicator). There
// is no browser: redirectToAuthorization follows the URL with fetch, fills
// the provider's login form, and stops at the redirect to redirectUrl with
// the code; finishAuth exchanges it and the client connects again. Then,
// per case: "approve" calls publish_report (its question answered by the
// elicitation handler), "task-cancel" runs slow_compute as a task through
// the experimental Tasks API and cancels it.
//
// It prints one JSON line {case, status, text, isError, error, wire,
// authorization, token}: the outcome as the client's API reports it, every
// HTTP exchange of the transport (method, URL without query, status), the
// authorization URL's parameters and the access token's claims.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, which] = process.argv.slice(2);
const user = process.env.CLIENTMATRIX_OAUTH_USER;
const password = process.env.CLIENTMATRIX_OAUTH_PASSWORD;
const redirectUrl = "http://127.0.0.1/oauth/callback";
const out = { case: which, wire: [] };
const textOf = (r) => (r?.content ?? []).map((c) => c.text ?? "").join("\n");

// recordingFetch is the transport's fetch: it records every exchange.
async function recordingFetch(input, init) {
  const resp = await fetch(input, init);
  const u = new URL(input instanceof Request ? input.url : String(input));
  out.wire.push({ method: init?.method ?? (input instanceof Request ? input.method : "GET"), url: u.origin + u.pathname, status: resp.status });
  return resp;
}

// login follows the authorization URL as a browser would: redirects, the
// provider's login form (filled with the user's login), until the redirect
// to redirectUrl; it returns that URL's query.
async function login(authorizationUrl) {
  let next = new URL(authorizationUrl);
  let init = { redirect: "manual" };
  for (let hop = 0; hop < 10; hop++) {
    const resp = await fetch(next, init);
    if (resp.status >= 300 && resp.status < 400) {
      const loc = new URL(resp.headers.get("location"), next);
      if (loc.href.startsWith(redirectUrl)) return loc.searchParams;
      next = loc;
      init = { redirect: "manual" };
      continue;
    }
    const page = await resp.text();
    const form = /<form method="POST" action="([^"]+)">/.exec(page);
    const id = /name="id" value="([^"]*)"/.exec(page);
    if (resp.status !== 200 || !form || !id) throw new Error(`login: HTTP ${resp.status} at ${next.pathname}: ${page.slice(0, 200)}`);
    next = new URL(form[1], next);
    init = {
      method: "POST",
      redirect: "manual",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ id: id[1], username: user, password }).toString(),
    };
  }
  throw new Error("login: too many redirects");
}

// provider keeps the client's registration, tokens and PKCE verifier in
// memory, as a host would in its store.
let code;
let expectedState;
const store = {};
const provider = {
  get redirectUrl() {
    return redirectUrl;
  },
  get clientMetadata() {
    return {
      client_name: "clientmatrix-sdk-v1-oauth",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  state() {
    expectedState = crypto.randomUUID();
    return expectedState;
  },
  clientInformation: () => store.client,
  saveClientInformation: (c) => {
    store.client = c;
  },
  tokens: () => store.tokens,
  saveTokens: (t) => {
    store.tokens = t;
  },
  saveCodeVerifier: (v) => {
    store.verifier = v;
  },
  codeVerifier: () => store.verifier,
  async redirectToAuthorization(authorizationUrl) {
    out.authorization = Object.fromEntries(authorizationUrl.searchParams);
    const back = await login(authorizationUrl);
    if (back.get("state") !== expectedState) throw new Error(`state ${back.get("state")}, want ${expectedState}`);
    if (back.get("error")) throw new Error(`authorization error ${back.get("error")}: ${back.get("error_description")}`);
    code = back.get("code");
  },
};

function newClient() {
  const client = new Client({ name: "clientmatrix-sdk-v1-oauth", version: "0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { action: "accept" } }));
  return client;
}
const transport = () => new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch });

let client = newClient();
try {
  const first = transport();
  try {
    await client.connect(first);
    throw new Error("the first connect succeeded without a login");
  } catch (e) {
    if (!(e instanceof UnauthorizedError) || !code) throw e;
  }
  await first.finishAuth(code);
  out.client = store.client?.client_id;
  out.token = JSON.parse(Buffer.from(store.tokens.access_token.split(".")[1], "base64url").toString());
  client = newClient();
  await client.connect(transport());
  const tools = (await client.listTools()).tools.map((t) => t.name);
  if (!tools.includes("publish_report") || !tools.includes("slow_compute")) throw new Error(`tools/list: ${tools}`);
  switch (which) {
    case "approve": {
      const r = await client.callTool({ name: "publish_report", arguments: { title: "Matrix", topic: "sdk v1 oauth" } });
      out.status = "completed";
      out.isError = r.isError === true;
      out.text = textOf(r);
      break;
    }
    case "task-cancel": {
      let taskId;
      const stream = client.experimental.tasks.callToolStream(
        { name: "slow_compute", arguments: { seconds: 120, label: "oauth cancel" }, task: { ttl: 600000 } },
        CallToolResultSchema,
      );
      for await (const msg of stream) {
        if (msg.type === "taskCreated") {
          taskId = msg.task.taskId;
          await client.experimental.tasks.cancelTask(taskId);
        }
      }
      if (!taskId) throw new Error("no task was created");
      out.status = (await client.experimental.tasks.getTask(taskId)).status;
      break;
    }
    default:
      throw new Error(`unknown case ${which}`);
  }
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
