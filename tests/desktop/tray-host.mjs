// What a tray host does to the app's tray, done from a test or a benchmark, on a private session
// bus and display (whatever `env` names):
// - a StatusNotifierItem host (KDE, GNOME's AppIndicator extension, waybar) draws the menu itself
//   from the app indicator's dbusmenu export: it reads the layout, says the menu opened, sends
//   an item's click, says it closed. `trayHost(env).trayMenu(pid)` finds that export;
// - an XEmbed tray (trayer here; i3bar, polybar, stalonetray) embeds the icon, and a click on it
//   pops the GtkMenu up inside the app. `trayHost(env).trayIcon()` is where to click.
// Shared by tests/desktop/e2e.test.mjs and benches/at_rest.mjs.
import { execFileSync } from "node:child_process";

/// The menu's fixed items (everything but the sessions' rows), as dbusmenu labels them.
export const FIXED_ITEMS = ["", "No sessions yet", "Open Agent Tray", "Install hooks…", "Settings", "Reveal logs", "Quit"];

export function trayHost(env) {
  /// dbus-send on the private bus; its reply as dbus-send prints it.
  const dbus = (dest, objectPath, method, ...args) =>
    execFileSync("dbus-send", ["--session", "--print-reply", `--dest=${dest}`, objectPath, method, ...args], { env, encoding: "utf8", timeout: 5000 });

  /// The app indicator's menu of `pid` on the bus: its connection's name and the dbusmenu object
  /// path (under /org/ayatana/NotificationItem/), or null.
  function trayMenu(pid) {
    const names = [...dbus("org.freedesktop.DBus", "/", "org.freedesktop.DBus.ListNames").matchAll(/string "(:[^"]+)"/g)].map((m) => m[1]);
    const name = names.find((n) => {
      try {
        return Number(/uint32 (\d+)/.exec(dbus("org.freedesktop.DBus", "/", "org.freedesktop.DBus.GetConnectionUnixProcessID", `string:${n}`))[1]) === pid
          && /NotificationItem/.test(dbus(n, "/org/ayatana", "org.freedesktop.DBus.Introspectable.Introspect"));
      } catch {
        return false;
      }
    });
    if (!name) return null;
    const find = (objectPath) => {
      const xml = dbus(name, objectPath, "org.freedesktop.DBus.Introspectable.Introspect");
      if (/interface name="com.canonical.dbusmenu"/.test(xml)) return objectPath;
      for (const [, child] of xml.matchAll(/<node name="([^"]+)"/g)) {
        const found = find(`${objectPath === "/" ? "" : objectPath}/${child}`);
        if (found) return found;
      }
      return null;
    };
    const menuPath = find("/org/ayatana");
    return menuPath ? { name, path: menuPath } : null;
  }

  /// The menu's items now (ids change as the tray rebuilds it): id and label, in order.
  function menuItems(menu) {
    const layout = dbus(menu.name, menu.path, "com.canonical.dbusmenu.GetLayout", "int32:0", "int32:-1", "array:string:");
    return layout.split(/struct \{\s*int32 /).slice(1).map((part) => ({
      id: Number(/^(\d+)/.exec(part)[1]),
      label: /string "label"\s*variant\s*string "([^"]*)"/.exec(part)?.[1] ?? "",
    }));
  }

  /// The first session's item (not one of the fixed items), or undefined.
  const firstSessionItem = (menu) => menuItems(menu).find((m) => m.id > 0 && !FIXED_ITEMS.includes(m.label));

  /// What a StatusNotifierItem host sends when the user opens the menu, clicks an item, and when
  /// the menu closes.
  const menuOpened = (menu) => {
    dbus(menu.name, menu.path, "com.canonical.dbusmenu.AboutToShow", "int32:0");
    dbus(menu.name, menu.path, "com.canonical.dbusmenu.Event", "int32:0", "string:opened", "variant:int32:0", "uint32:0");
  };
  const menuClick = (menu, id) => dbus(menu.name, menu.path, "com.canonical.dbusmenu.Event", `int32:${id}`, "string:clicked", "variant:int32:0", "uint32:0");
  const menuClosed = (menu) => dbus(menu.name, menu.path, "com.canonical.dbusmenu.Event", "int32:0", "string:closed", "variant:int32:0", "uint32:0");

  /// trayer's panel (the widest window of its class: its 10x10 child and leader are not) and
  /// where the only icon sits (the tray is right-aligned: at its right end).
  function trayIcon() {
    const geometries = execFileSync("xdotool", ["search", "--class", "trayer"], { env, encoding: "utf8" })
      .trim().split("\n").filter(Boolean)
      .map((id) => ({ id, ...Object.fromEntries(execFileSync("xdotool", ["getwindowgeometry", "--shell", id], { env, encoding: "utf8" })
        .trim().split("\n").map((l) => l.split("="))) }));
    if (geometries.length === 0) throw new Error("trayer is not running");
    const g = geometries.reduce((a, b) => (Number(b.WIDTH) > Number(a.WIDTH) ? b : a));
    return { panel: g.id, x: Number(g.X) + Number(g.WIDTH) - 16, y: Number(g.Y) + Number(g.HEIGHT) / 2 };
  }

  /// A click on the tray icon (an XEmbed tray pops the menu up in the app), and keys to the menu.
  const clickIcon = (icon = trayIcon()) => execFileSync("xdotool", ["mousemove", String(icon.x), String(icon.y), "click", "1"], { env });
  const keys = (...names) => execFileSync("xdotool", ["key", ...names], { env });

  return { dbus, trayMenu, menuItems, firstSessionItem, menuOpened, menuClick, menuClosed, trayIcon, clickIcon, keys };
}
