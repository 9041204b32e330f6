/** The parts of `s3rver` (an in-process S3 server, no published types) the tests use. */
declare module "s3rver" {
  interface S3rverOptions {
    readonly address?: string
    readonly port?: number
    readonly silent?: boolean
    readonly directory?: string
    readonly configureBuckets?: ReadonlyArray<{ readonly name: string; readonly configs: ReadonlyArray<string | Buffer> }>
  }
  export default class S3rver {
    constructor(options: S3rverOptions)
    run(): Promise<{ readonly address: string; readonly port: number }>
    close(): Promise<void>
  }
}
