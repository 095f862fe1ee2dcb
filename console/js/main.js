// The console's entry point: a hash router (#/corpora, #/models/<id>, …) that renders
// one page module into <main>, stops the previous page's timers, marks the current
// navigation link and moves focus to the new page for keyboard and screen-reader users.

import { h, mount, problemBox } from "./ui.js";
import * as corpora from "./pages/corpora.js";
import * as corpus from "./pages/corpus.js";
import * as graphs from "./pages/graphs.js";
import * as fit from "./pages/fit.js";
import * as jobs from "./pages/jobs.js";
import * as job from "./pages/job.js";
import * as models from "./pages/models.js";
import * as model from "./pages/model.js";
import * as sweep from "./pages/sweep.js";
import * as compare from "./pages/compare.js";

/** [pattern, page, section of the navigation it belongs to]. */
const ROUTES = [
  [/^\/corpora$/, corpora, "corpora"],
  [/^\/corpora\/([^/]+)$/, corpus, "corpora"],
  [/^\/graphs$/, graphs, "graphs"],
  [/^\/fit$/, fit, "fit"],
  [/^\/jobs$/, jobs, "jobs"],
  [/^\/jobs\/([^/]+)$/, job, "jobs"],
  [/^\/models$/, models, "models"],
  [/^\/models\/([^/]+)$/, model, "models"],
  [/^\/models\/([^/]+)\/compare\/([^/]+)$/, compare, "models"],
  [/^\/sweeps\/([^/]+)$/, sweep, "jobs"],
];

const main = document.getElementById("main");
let cleanup = null;

async function route() {
  const raw = location.hash.replace(/^#/, "") || "/corpora";
  const [path, search] = raw.split("?");
  const query = new URLSearchParams(search || "");
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  const found = ROUTES.map(([re, page, section]) => [re.exec(path), page, section]).find(([m]) => m);
  for (const a of document.querySelectorAll("header nav a")) {
    if (found && a.getAttribute("href") === `#/${found[2]}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!found) {
    mount(main, h("h1", {}, "Not found"), h("p", {}, "No console page at ", h("code", {}, raw), ". ", h("a", { href: "#/corpora" }, "Go to corpora")));
    return;
  }
  const [match, page] = found;
  mount(main, h("p", { class: "muted" }, "Loading…"));
  const token = {};
  route.current = token;
  try {
    const stop = await page.render(main, match.slice(1).map(decodeURIComponent), query);
    if (route.current === token) cleanup = typeof stop === "function" ? stop : null;
    else if (typeof stop === "function") stop();
  } catch (err) {
    if (route.current === token) mount(main, h("h1", {}, "Something went wrong"), problemBox(err));
  }
  if (route.current === token) {
    const heading = main.querySelector("h1");
    document.title = heading ? `${heading.textContent} · topicd` : "topicd console";
    main.focus({ preventScroll: true });
  }
}

window.addEventListener("hashchange", route);
route();
