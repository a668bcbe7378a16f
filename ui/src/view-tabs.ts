// The tabs that switch the window between its views (Sessions, Today, History). A module of its
// own so that no view needs to know the others to be shown or hidden.
import { el } from "./dom";

export type ViewName = "sessions" | "today" | "history";

/// A view as the tabs see it: the parts of the page it shows, and what it does each time it is
/// shown.
export interface TabbedView {
  parts: HTMLElement[];
  shown?: () => void;
}

export interface ViewTabs {
  /// The tablist, for the page's toolbar.
  tablist: HTMLElement;
  show(view: ViewName): void;
}

/// The sessions are shown first: the other views create their parts hidden.
export function createViewTabs(views: Record<ViewName, TabbedView>): ViewTabs {
  let current: ViewName = "sessions";
  const tabButtons = new Map<ViewName, HTMLButtonElement>();
  const tablist = el("nav", { class: "tabs", attrs: { role: "tablist", "aria-label": "Views", id: "views" } });
  for (const [name, label] of [["sessions", "Sessions"], ["today", "Today"], ["history", "History"]] as [ViewName, string][]) {
    // One tab stop for the tablist (the chosen tab); the arrows move between tabs.
    const b = el("button", { class: "tab", attrs: { type: "button", role: "tab", id: `tab-${name}`, "data-view": name, "aria-selected": String(name === current), tabindex: name === current ? "0" : "-1" } }, label);
    b.addEventListener("click", () => show(name));
    tabButtons.set(name, b);
    tablist.append(b);
  }
  tablist.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
    event.preventDefault();
    const names = [...tabButtons.keys()];
    const next = names[(names.indexOf(current) + (event.key === "ArrowRight" ? 1 : names.length - 1)) % names.length];
    show(next);
    tabButtons.get(next)?.focus();
  });

  function show(view: ViewName): void {
    current = view;
    for (const [name, b] of tabButtons) {
      b.setAttribute("aria-selected", String(name === view));
      b.tabIndex = name === view ? 0 : -1;
    }
    for (const [name, v] of Object.entries(views)) for (const part of v.parts) part.hidden = name !== view;
    document.body.dataset.view = view;
    views[view].shown?.();
  }

  return { tablist, show };
}
