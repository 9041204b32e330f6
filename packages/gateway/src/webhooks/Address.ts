/**
 * Where webhooks may go (DESIGN.md §8): `https` URLs that resolve to public addresses, unless
 * `GATEWAY_WEBHOOK_ALLOW_INSECURE` / `GATEWAY_WEBHOOK_ALLOW_PRIVATE` say otherwise. Checked at
 * registration and again when connecting: the delivery agent resolves names through
 * `guardedLookup`, so the address it connects to is the address that was checked (no DNS
 * rebinding between a check and the connection).
 */
import * as dns from "node:dns"
import * as net from "node:net"

/** What the rules allow. */
export interface AddressRules {
  readonly allowInsecure: boolean
  readonly allowPrivate: boolean
}

const blocked = new net.BlockList()
for (
  const [prefix, bits] of [
    ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
    ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["198.51.100.0", 24],
    ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4]
  ] as const
) blocked.addSubnet(prefix, bits, "ipv4")
for (
  const [prefix, bits] of [
    ["::", 128], ["::1", 128], ["64:ff9b:1::", 48], ["100::", 64], ["2001:db8::", 32], ["fc00::", 7], ["fe80::", 10],
    ["ff00::", 8]
  ] as const
) blocked.addSubnet(prefix, bits, "ipv6")

/** Whether `ip` is a public unicast address (IPv4-mapped IPv6 judged as its IPv4 address). */
export const isPublicAddress = (ip: string): boolean => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped !== null) return isPublicAddress(mapped[1]!)
  const family = net.isIP(ip)
  if (family === 0) return false
  return !blocked.check(ip, family === 4 ? "ipv4" : "ipv6")
}

/** Thrown (and reported as the attempt's `last_error`) when a connection is refused by the rules. */
export class AddressRefused extends Error {}

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1")

/** The scheme and literal-address rules; an error message, or `undefined` when allowed. */
export const checkSyntax = (raw: string, rules: AddressRules): { readonly url: URL } | string => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "url must be an absolute URL"
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && rules.allowInsecure)) {
    return rules.allowInsecure ? "url must be http or https" : "url must use https (GATEWAY_WEBHOOK_ALLOW_INSECURE=1 allows http)"
  }
  if (url.username !== "" || url.password !== "") return "url must not carry credentials"
  if (raw.length > 2048) return "url must be at most 2048 characters"
  const host = hostOf(url)
  if (net.isIP(host) !== 0 && !rules.allowPrivate && !isPublicAddress(host)) {
    return `url must point to a public address, not ${host} (GATEWAY_WEBHOOK_ALLOW_PRIVATE=1 allows private ones)`
  }
  return { url }
}

/** Resolves every address of `host`. */
const resolveAll = (host: string) =>
  new Promise<ReadonlyArray<dns.LookupAddress>>((resolve, reject) =>
    dns.lookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)))
  )

/** Checks a URL at registration: scheme, and every address its host resolves to. */
export const checkUrl = async (raw: string, rules: AddressRules): Promise<URL | string> => {
  const syntax = checkSyntax(raw, rules)
  if (typeof syntax === "string") return syntax
  const host = hostOf(syntax.url)
  if (net.isIP(host) !== 0 || rules.allowPrivate) return syntax.url
  const addresses = await resolveAll(host).catch(() => undefined)
  if (addresses === undefined || addresses.length === 0) return `url host ${host} does not resolve`
  const refused = addresses.find((a) => !isPublicAddress(a.address))
  if (refused !== undefined) {
    return `url host ${host} resolves to a non-public address (${refused.address}); GATEWAY_WEBHOOK_ALLOW_PRIVATE=1 allows it`
  }
  return syntax.url
}

/**
 * A `lookup` for `net.connect` that refuses non-public answers: the connection uses exactly the
 * addresses checked here.
 */
export const guardedLookup = (rules: AddressRules): net.LookupFunction => (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return (callback as any)(err)
    const list = addresses as unknown as Array<dns.LookupAddress>
    if (!rules.allowPrivate) {
      const refused = list.find((a) => !isPublicAddress(a.address))
      if (refused !== undefined) {
        return (callback as any)(new AddressRefused(`refused to connect: ${hostname} resolves to the non-public address ${refused.address}`))
      }
    }
    if ((options as dns.LookupOptions).all === true) return (callback as any)(null, list)
    const first = list[0]
    if (first === undefined) return (callback as any)(new Error(`${hostname} does not resolve`))
    return (callback as any)(null, first.address, first.family)
  })
}
