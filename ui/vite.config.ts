// The console is served by weft under /ui/ (protocols/rest/console.cpp);
// CMake builds it with `npm run build -- --outDir <build tree>`.
// `npm run dev` serves it with hot reload and passes API calls on to the
// weft named by WEFT_URL (default http://127.0.0.1:8080).
import { defineConfig } from "vite";

const weft = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.WEFT_URL ??
  "http://127.0.0.1:8080";

export default defineConfig({
  base: "/ui/",
  build: {
    target: "es2020",
    // One stylesheet and one script: nothing to fetch from elsewhere.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: {
    proxy: { "/api": weft, "/healthz": weft, "/readyz": weft },
  },
});
