import { createHash } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { gzipSync } from "node:zlib"

/** A one-file-per-entry ustar archive, as npm packs packages. */
const tar = (files: Record<string, string>): Buffer => {
  const blocks: Array<Buffer> = []
  for (const [name, content] of Object.entries(files)) {
    const body = Buffer.from(content, "utf8")
    const header = Buffer.alloc(512)
    const field = (offset: number, length: number, value: string) => header.write(value, offset, length, "ascii")
    field(0, 100, name)
    field(100, 8, "0000644\0")
    field(108, 8, "0000000\0")
    field(116, 8, "0000000\0")
    field(124, 12, body.length.toString(8).padStart(11, "0") + "\0")
    field(136, 12, "00000000000\0")
    field(148, 8, "        ")
    field(156, 1, "0")
    field(257, 6, "ustar\0")
    field(263, 2, "00")
    const checksum = header.reduce((sum, byte) => sum + byte, 0)
    field(148, 8, checksum.toString(8).padStart(6, "0") + "\0 ")
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512))
  }
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}

const tarball = (name: string, version: string) =>
  gzipSync(tar({
    "package/package.json": JSON.stringify({ name, version, main: "index.js" }),
    "package/index.js": `module.exports = ${JSON.stringify(version)}\n`
  }))

export interface FakePackage {
  readonly name: string
  readonly versions: ReadonlyArray<string>
  readonly latest: string
}

export interface FakeRegistry {
  readonly url: string
  /** Every request's path, in order. */
  readonly requests: Array<string>
  /** Packages whose tarballs answer 404. */
  readonly failing: Set<string>
  /** Tarballs ("name-version.tgz") answered only after this many milliseconds. */
  readonly slow: Map<string, number>
  readonly close: () => Promise<void>
}

/** An npm registry on 127.0.0.1: packuments and real tarballs, no internet. */
export const startFakeRegistry = async (packages: ReadonlyArray<FakePackage>): Promise<FakeRegistry> => {
  const requests: Array<string> = []
  const failing = new Set<string>()
  const slow = new Map<string, number>()
  const tarballs = new Map<string, Buffer>()
  const byName = new Map(packages.map((pkg) => [pkg.name, pkg]))
  let url = ""
  const packument = (pkg: FakePackage) => ({
    name: pkg.name,
    "dist-tags": { latest: pkg.latest },
    versions: Object.fromEntries(pkg.versions.map((version) => {
      const file = `${pkg.name.split("/").pop()}-${version}.tgz`
      const data = tarball(pkg.name, version)
      tarballs.set(`/${pkg.name}/-/${file}`, data)
      return [version, {
        name: pkg.name,
        version,
        dist: {
          tarball: `${url}${pkg.name}/-/${file}`,
          shasum: createHash("sha1").update(data).digest("hex"),
          integrity: `sha512-${createHash("sha512").update(data).digest("base64")}`
        }
      }]
    }))
  })
  const server = createServer((request, response) => {
    const path = request.url ?? "/"
    requests.push(path)
    const send = (status: number, body: string | Buffer, type = "application/json") => {
      response.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) })
      response.end(body)
    }
    if (path.includes("/-/")) {
      const name = path.slice(1, path.indexOf("/-/"))
      const data = tarballs.get(path)
      if (data === undefined || failing.has(name)) return send(404, JSON.stringify({ error: "not found" }))
      setTimeout(() => send(200, data, "application/octet-stream"), slow.get(path.split("/").pop()!) ?? 0)
      return
    }
    const pkg = byName.get(decodeURIComponent(path.slice(1)))
    if (pkg === undefined) return send(404, JSON.stringify({ error: "not found" }))
    send(200, JSON.stringify(packument(pkg)))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  return {
    url,
    requests,
    failing,
    slow,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** A server that accepts connections and never answers. */
export const startSilentServer = async () => {
  const server = createServer(() => {})
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
