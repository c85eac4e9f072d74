// The gateway's /v1 API as the explorer uses it. The key travels in the Authorization header
// only: never in a URL, never in a cookie; it is kept in sessionStorage (gone with the tab).

const KEY_ITEM = "memstream.explorer.key";

export class ApiFailure extends Error {
  constructor({ status, code, message, details, requestId, retryAfter }) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = Array.isArray(details) ? details : [];
    this.requestId = requestId || "";
    this.retryAfter = retryAfter || "";
  }
}

export function storedKey() {
  try {
    return sessionStorage.getItem(KEY_ITEM) || "";
  } catch {
    return "";
  }
}

export function storeKey(key) {
  sessionStorage.setItem(KEY_ITEM, key);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_ITEM);
}

// A query string from an object, leaving out empty values (the key is never one of them).
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (value === undefined || value === null || value === "") continue;
    search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

// A path segment: ids may hold "/" and other characters a URL gives a meaning to.
export function segment(value) {
  return encodeURIComponent(String(value));
}

async function failureOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const error = body && typeof body === "object" && body.error && typeof body.error === "object" ? body.error : {};
  return new ApiFailure({
    status: response.status,
    code: typeof error.code === "string" ? error.code : `http_${response.status}`,
    message: typeof error.message === "string" ? error.message : response.statusText || "no message",
    details: error.details,
    requestId: response.headers.get("x-request-id"),
    retryAfter: response.headers.get("retry-after"),
  });
}

export class Api {
  constructor(key, { onUnauthorized } = {}) {
    this.key = key;
    this.onUnauthorized = onUnauthorized || (() => {});
  }

  async request(method, path, { params, body } = {}) {
    const headers = { Authorization: `Bearer ${this.key}`, Accept: "application/json" };
    const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(`/v1/${path}${query(params)}`, init);
    } catch (error) {
      throw new ApiFailure({ status: 0, code: "network", message: `the gateway did not answer (${error.message})` });
    }
    if (!response.ok) {
      const failure = await failureOf(response);
      if (failure.status === 401) this.onUnauthorized(failure);
      throw failure;
    }
    if (response.status === 204) return {};
    try {
      return await response.json();
    } catch {
      throw new ApiFailure({ status: response.status, code: "bad_json", message: "the gateway's answer was not JSON" });
    }
  }

  get(path, params) {
    return this.request("GET", path, { params });
  }

  post(path, body, params) {
    return this.request("POST", path, { body: body ?? {}, params });
  }

  delete(path, params) {
    return this.request("DELETE", path, { params });
  }
}

// What a failure means for the person, and what to do about it.
export function explain(failure) {
  if (!(failure instanceof ApiFailure)) {
    return { title: "Something went wrong in the page", text: String(failure && failure.message ? failure.message : failure) };
  }
  const wait = failure.retryAfter ? ` Retry in ${failure.retryAfter} s.` : " Retry in a moment.";
  const said = failure.message ? ` The gateway said: “${failure.message}”` : "";
  const id = failure.requestId ? ` (request ${failure.requestId})` : "";
  switch (failure.status) {
    case 0:
      return { title: "The gateway cannot be reached", text: `Is memstream running? ${failure.message}.` };
    case 401:
      return {
        title: "This key was not accepted (401)",
        text: "Check that you pasted the whole key (msk_…) and that it has not been revoked (memstream keys list --tenant …).",
      };
    case 403:
      return { title: "This key may not do that (403)", text: `${said}${id}. Ask for a key with the scope it needs.` };
    case 404:
      return { title: "Not found (404)", text: `${said}${id}.` };
    case 422:
      return { title: "The request was not valid (422)", text: `${said}.` };
    case 429:
      return { title: "Too many requests (429)", text: `The key or tenant is over its rate limit.${wait}` };
    case 503:
      return { title: "memstream is unavailable (503)", text: `A store or the broker did not answer.${said}${wait}` };
    default:
      return { title: `The gateway answered ${failure.status}`, text: `${said}${id}.` };
  }
}
