import { defineConfig } from "vite";

// The window is served from ui/dist by the shell (tauri.conf.json `frontendDist`). Relative asset
// paths let the same build be opened by the Playwright tests from a static server.
export default defineConfig({
  base: "./",
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    // Two pages: the window (index.html) and the tray's popover (popover.html).
    rollupOptions: { input: { main: "index.html", popover: "popover.html" } },
  },
});
