// The dashboard's only door to healthd: same-origin fetches, with a pasted bearer token or the
// person's session cookie, and errors sorted into the few kinds the page reacts to differently.

export class APIFailure extends Error {
  /**
   * kind: "unauthorized" (401: the token or session is wrong, revoked or expired), "unavailable"
   * (404: this server does not have the endpoint, or the thing named does not exist), "network"
   * (the server could not be reached), or "http" (any other status; `detail` carries the
   * problem+json detail). `retryAfter` is the Retry-After header in seconds (429, 503), `code` the
   * problem's HealthKit-style code, `problem` the whole problem body.
   */
  constructor(kind, status, detail, path, extra = {}) {
    super(`${kind}: ${detail}`);
    this.kind = kind;
    this.status = status;
    this.detail = detail;
    this.path = path;
    this.retryAfter = extra.retryAfter ?? null;
    this.code = extra.code ?? null;
    this.problem = extra.problem ?? null;
  }
}

/** Seconds from a Retry-After header (delta-seconds or an HTTP date), or null. */
export function retryAfterSeconds(header, now = Date.now()) {
  if (!header) return null;
  if (/^\s*\d+\s*$/.test(header)) return Number(header);
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}

// Routes a person reaches with the cookie as they are; every other /v1 path the dashboard reads is
// an app route, which a cookie never authorizes: a signed-in person reads its /v1/me mirror.
const PERSON_ROUTES = [/^\/v1\/me(\/|$)/, /^\/v1\/session$/, /^\/v1\/people\//, /^\/v1\/authorization-requests(\/|$)/];

/** The path a signed-in person requests for one the dashboard reads (`/v1/summary` -> `/v1/me/summary`). */
export function personPath(path) {
  const bare = path.split("?")[0];
  if (!bare.startsWith("/v1/") || PERSON_ROUTES.some((route) => route.test(bare))) return path;
  return "/v1/me/" + path.slice("/v1/".length);
}

/**
 * A client for one way in: `{ token }` (a pasted read token: `Authorization: Bearer`), or
 * `{ session: true }` (the person's cookie, sent by the browser on same-origin requests; reads go
 * to the /v1/me mirrors, and state-changing calls are JSON, which the server requires with a cookie).
 */
export function makeClient(credentials) {
  const session = typeof credentials === "object" && credentials !== null && credentials.session === true;
  const token = typeof credentials === "string" ? credentials : credentials && credentials.token;

  async function request(path, init = {}) {
    const target = session ? personPath(path) : path;
    const headers = { Accept: "application/json", ...(init.headers || {}) };
    if (!session && token) headers.Authorization = `Bearer ${token}`;
    let response;
    try {
      response = await fetch(target, { ...init, headers, cache: "no-store", credentials: "same-origin" });
    } catch (error) {
      if (error && error.name === "AbortError") throw error;
      throw new APIFailure("network", 0, "the server could not be reached", target);
    }
    if (response.ok) return response;
    let detail = `HTTP ${response.status}`;
    let problem = null;
    try {
      problem = await response.json();
      if (problem && typeof problem.detail === "string") detail = problem.detail;
      else if (problem && typeof problem.error === "string") detail = problem.error;
    } catch {
      // A body that is not problem+json still has a status worth reporting.
    }
    const kind = response.status === 401 ? "unauthorized" : response.status === 404 ? "unavailable" : "http";
    throw new APIFailure(kind, response.status, detail, target, {
      retryAfter: retryAfterSeconds(response.headers.get("Retry-After")),
      code: problem && typeof problem.code === "string" ? problem.code : null,
      problem,
    });
  }

  async function getJSON(path, parameters = {}) {
    const query = new URLSearchParams(parameters).toString();
    const response = await request(query ? `${path}?${query}` : path);
    try {
      return await response.json();
    } catch {
      throw new APIFailure("http", response.status, "the response was not JSON", path);
    }
  }

  /**
   * A state-changing call: always `Content-Type: application/json` (a cookie request that is not
   * JSON is refused, so a form on another site cannot post), with `body` as JSON when given.
   * Answers the parsed JSON body, or null for an empty one (204).
   */
  async function send(method, path, body) {
    const init = { method, headers: { "Content-Type": "application/json" } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const response = await request(path, init);
    const text = await response.text();
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch {
      throw new APIFailure("http", response.status, "the response was not JSON", path);
    }
  }

  /** Every sample of one query, following `next` cursors (bounded, so a runaway never hangs the page). */
  async function allSamples(parameters, maximumPages = 20) {
    const samples = [];
    let cursor = null;
    for (let page = 0; page < maximumPages; page++) {
      const body = await getJSON("/v1/samples", cursor ? { ...parameters, cursor } : parameters);
      samples.push(...body.samples);
      cursor = body.next;
      if (!cursor) break;
    }
    return samples;
  }

  return { session, request, getJSON, send, allSamples };
}
