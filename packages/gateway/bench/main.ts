/** Running a bench script on its own: `npx tsx bench/<script>.ts …` prints its result as one JSON line. */
import { pathToFileURL } from "node:url"

/** Whether the module at `url` is the script node was started with. */
export const isMain = (url: string): boolean => process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href

/** Prints the result as JSON and exits 0, or prints the error and exits 1. */
export const printAndExit = (result: Promise<unknown>): void => {
  result.then(
    (value) => {
      console.log(JSON.stringify(value))
      process.exit(0)
    },
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}
