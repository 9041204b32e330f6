/**
 * vendor-c's bearer token: an HS256 JWT `{iss: <access key>, exp: now+1800, nbf: now-5}` signed
 * with the secret key (UPSTREAMS.md), made with node:crypto.
 */
import { createHmac } from "node:crypto"

/** Token lifetime the vendor documents, in seconds. */
export const lifetimeSeconds = 1800

/** Tolerated clock skew: the token is valid from five seconds ago. */
export const skewSeconds = 5

const segment = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64url")

/** Signs a token valid from `nowSeconds - 5` to `nowSeconds + 1800`. */
export const sign = (accessKey: string, secretKey: string, nowSeconds: number): { readonly token: string; readonly exp: number } => {
  const exp = nowSeconds + lifetimeSeconds
  const unsigned = `${segment({ alg: "HS256", typ: "JWT" })}.${segment({ iss: accessKey, exp, nbf: nowSeconds - skewSeconds })}`
  const signature = createHmac("sha256", secretKey).update(unsigned).digest("base64url")
  return { token: `${unsigned}.${signature}`, exp }
}
