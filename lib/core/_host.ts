/**
 * A host as a URL writes it: an IPv6 address in brackets (`::1` -> `[::1]`), a name or an IPv4 address as is.
 * @example `http://${urlHost("::1")}:3001` // "http://[::1]:3001"
 */
export const urlHost = (host: string): string => (host.includes(":") ? `[${host}]` : host);
