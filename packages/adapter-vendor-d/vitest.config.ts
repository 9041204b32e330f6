import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "@genway/adapter-vendor-d",
    include: ["test/**/*.test.ts"]
  }
})
