import { invoke } from "@tauri-apps/api/core";

const root = document.getElementById("app");
if (root) {
  const heading = document.createElement("h1");
  heading.textContent = "Agent Tray";
  root.append(heading);
  invoke<string>("app_version")
    .then((v) => {
      const p = document.createElement("p");
      p.textContent = `version ${v}`;
      root.append(p);
    })
    .catch(() => undefined);
}
