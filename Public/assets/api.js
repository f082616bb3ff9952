// The dashboard's only door to healthd: same-origin fetches with the bearer token, and errors
// sorted into the few kinds the page reacts to differently.

export class APIFailure extends Error {
  /**
   * kind: "unauthorized" (401: the token is wrong or revoked), "unavailable" (404: this server
   * does not have the endpoint yet), "network" (the server could not be reached), or "http"
   * (any other status; `detail` carries the problem+json detail).
   */
  constructor(kind, status, detail, path) {
    super(`${kind}: ${detail}`);
    this.kind = kind;
    this.status = status;
    this.detail = detail;
    this.path = path;
  }
}

export function makeClient(token) {
  async function request(path, init = {}) {
    const headers = { Authorization: `Bearer ${token}`, Accept: "application/json", ...(init.headers || {}) };
    let response;
    try {
      response = await fetch(path, { ...init, headers, cache: "no-store" });
    } catch (error) {
      if (error && error.name === "AbortError") throw error;
      throw new APIFailure("network", 0, "the server could not be reached", path);
    }
    if (response.ok) return response;
    let detail = `HTTP ${response.status}`;
    try {
      const problem = await response.json();
      if (problem && typeof problem.detail === "string") detail = problem.detail;
    } catch {
      // A body that is not problem+json still has a status worth reporting.
    }
    const kind = response.status === 401 ? "unauthorized" : response.status === 404 ? "unavailable" : "http";
    throw new APIFailure(kind, response.status, detail, path);
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

  return { request, getJSON, allSamples };
}
