// What both pages (the window and the popover) share about their first paint: the data the
// shell creates them with, and the stamps benches/at_rest.sh reads to time an open.
import type { Snapshot, WindowMemory } from "./bindings";

declare global {
  interface Window {
    /// When the page first painted its sessions (epoch ms): the open-to-painted benchmark.
    __agentTrayPaintedAt?: number;
    /// The snapshot (and, for the window, its saved state) as the shell had them when it
    /// created the page, set by its initialization script (window.rs, popover.rs): the first
    /// paint needs no IPC.
    __agentTrayBoot?: { snapshot: Snapshot; memory: WindowMemory };
  }
}

/// Marks the rows as built, then stamps the frame after the first one that holds them: they are
/// on screen by then. `afterPaint` runs in a task of its own once they are: work the first frame
/// need not wait for.
export function stampPaint(afterPaint?: () => void): void {
  performance.mark("agent-tray:rows");
  requestAnimationFrame(() => {
    performance.mark("agent-tray:frame");
    requestAnimationFrame(() => {
      window.__agentTrayPaintedAt ??= Date.now();
      if (afterPaint) setTimeout(afterPaint, 0);
    });
  });
}
