/**
 * Verifying the server against a CA of your own (the `ca` option), on Node: the
 * platform's fetch has no portable way to take one, so requests to an https:// server
 * go through node:https with that CA (and only it) trusted. Browsers verify with the
 * system's store and never reach this file.
 */

/** Codes Node and OpenSSL give a certificate that does not verify. */
const REFUSALS = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** The verification failure behind a failed request, if that is what it was. */
export function certificateProblem(error: unknown): string | undefined {
  let seen: unknown = error;
  for (let depth = 0; seen != null && depth < 5; depth++) {
    const code = (seen as { code?: unknown }).code;
    if (typeof code === "string" && REFUSALS.has(code)) {
      const message = (seen as { message?: unknown }).message;
      return typeof message === "string" ? `${code}: ${message}` : code;
    }
    seen = (seen as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A fetch for https:// URLs that trusts `ca` (PEM) instead of the system's CAs. */
export function fetchTrusting(ca: string | Uint8Array): typeof fetch {
  const trusted = typeof ca === "string" ? ca : new TextDecoder().decode(ca);
  const trustingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== "https:") return globalThis.fetch(input, init);
    const https = await import("node:https");
    return await new Promise<Response>((resolve, reject) => {
      const request = https.request(
        url,
        {
          method: init?.method ?? "GET",
          headers: (init?.headers ?? {}) as Record<string, string>,
          ca: trusted,
          ...(init?.signal ? { signal: init.signal } : {}),
        },
        (response) => {
          const chunks: Uint8Array[] = [];
          response.on("data", (chunk: Uint8Array) => chunks.push(chunk));
          response.on("error", reject);
          response.on("end", () => {
            const status = response.statusCode ?? 502;
            const headers = new Headers();
            for (const [name, value] of Object.entries(response.headers)) {
              if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
            }
            const empty = status === 204 || status === 304;
            resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers }));
          });
        },
      );
      request.on("error", reject);
      if (typeof init?.body === "string") request.write(init.body);
      request.end();
    });
  };
  return trustingFetch as typeof fetch;
}
