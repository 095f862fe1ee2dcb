// The console's one way to reach the topicd API (/v1 on the same origin).
// Why it exists: every request needs the same three things — the session's bearer token,
// problem+json errors turned into an ApiError that names the offending field, and a
// token prompt when the server answers 401 or 403 — so pages never call fetch directly.

const TOKEN_KEY = "topicd.token";

/** An error answer of the API: `status`, the problem document, and its `field`. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
    this.field = problem.field || null;
  }
}

function authHeaders(extra = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

let asking = null;

/**
 * Ask the person for a token (the dialog in index.html); resolves true once one is
 * stored. Requests refused at the same time share one prompt.
 */
export function askToken() {
  if (!asking) asking = prompt().finally(() => (asking = null));
  return asking;
}

function prompt() {
  const dialog = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  const cancel = document.getElementById("token-cancel");
  return new Promise((resolve) => {
    input.value = "";
    const done = (ok) => {
      dialog.removeEventListener("close", onClose);
      cancel.removeEventListener("click", onCancel);
      resolve(ok);
    };
    const onClose = () => {
      if (dialog.returnValue === "ok" && input.value.trim()) {
        sessionStorage.setItem(TOKEN_KEY, input.value.trim());
        done(true);
      } else done(false);
    };
    const onCancel = () => {
      dialog.returnValue = "";
      dialog.close();
    };
    dialog.addEventListener("close", onClose);
    cancel.addEventListener("click", onCancel);
    dialog.returnValue = "";
    dialog.showModal();
    input.focus();
  });
}

async function problemOf(status, text, contentType) {
  if (contentType.includes("json")) {
    try {
      return JSON.parse(text);
    } catch {
      /* fall through to plain text */
    }
  }
  return { title: `HTTP ${status}`, detail: text.slice(0, 300) || `HTTP ${status}` };
}

/**
 * Send a request; JSON bodies are serialised. Resolves with parsed JSON (or text for
 * other types, or a Blob with `{ blob: true }`); rejects with ApiError.
 */
export async function request(method, path, body, options = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = authHeaders(body === undefined ? {} : { "Content-Type": "application/json" });
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const contentType = response.headers.get("content-type") || "";
    if ((response.status === 401 || response.status === 403) && attempt === 0 && (await askToken())) continue;
    if (!response.ok) throw new ApiError(response.status, await problemOf(response.status, await response.text(), contentType));
    if (options.blob) return response.blob();
    if (response.status === 204) return null;
    return contentType.includes("json") ? response.json() : response.text();
  }
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body);
export const patch = (path, body) => request("PATCH", path, body);

/** A query string from an object, skipping null, undefined and "" values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/**
 * Upload a body (a File streams from disk) with XMLHttpRequest so the page can show
 * upload progress; `onProgress(fraction)` is called as bytes leave.
 */
export function upload(path, body, contentType, onProgress) {
  const send = () =>
    new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", path);
      xhr.setRequestHeader("Content-Type", contentType);
      for (const [k, v] of Object.entries(authHeaders())) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
      xhr.onerror = () => reject(new ApiError(0, { detail: "network error during upload" }));
      xhr.onload = async () => {
        const type = xhr.getResponseHeader("content-type") || "";
        if (xhr.status >= 200 && xhr.status < 300) resolve(JSON.parse(xhr.responseText));
        else reject(new ApiError(xhr.status, await problemOf(xhr.status, xhr.responseText, type)));
      };
      xhr.send(body);
    });
  return send().catch(async (e) => {
    if ((e.status === 401 || e.status === 403) && (await askToken())) return send();
    throw e;
  });
}
