// jobctl dashboard: live refresh of the page's <main data-live> by polling, confirmations, select-all.
// No framework, nothing from another host; the server renders every fragment.
"use strict";

(function () {
  const main = document.querySelector("main[data-live]");
  const live = document.getElementById("live");

  function busy() {
    // never replace what the user is working on: a focused field, a checked box, a hidden tab
    if (document.hidden) return true;
    const active = document.activeElement;
    if (active && live.contains(active) && active.matches("input, select, textarea, button")) return true;
    return live.querySelector("input[type=checkbox]:checked") !== null;
  }

  async function refresh() {
    if (busy()) return;
    try {
      const response = await fetch(location.href, {
        headers: { "X-Jobctl-Live": "1" },
        credentials: "same-origin",
        cache: "no-store",
      });
      if (response.status === 401) { location.reload(); return; }
      if (!response.ok) return;
      const html = await response.text();
      if (!busy()) {
        // a <details> the user opened (a job's traceback) stays open across the refresh
        const opened = Array.from(live.querySelectorAll("details[open][id]"), function (d) { return d.id; });
        live.innerHTML = html;  // the server's own fragment, escaped there
        opened.forEach(function (id) {
          const d = document.getElementById(id);
          if (d) d.open = true;
        });
        bind(live);
      }
    } catch (e) {
      // the server is away for a moment: try again at the next tick
    }
  }

  function bind(root) {
    root.querySelectorAll("form[data-confirm]").forEach(function (form) {
      if (form.dataset.bound) return;
      form.dataset.bound = "1";
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.dataset.confirm)) event.preventDefault();
      });
    });
    root.querySelectorAll("input[data-select-all]").forEach(function (box) {
      if (box.dataset.bound) return;
      box.dataset.bound = "1";
      box.addEventListener("change", function () {
        const form = box.closest("form");
        form.querySelectorAll("input[name=job_id]").forEach(function (b) { b.checked = box.checked; });
      });
    });
  }

  bind(document);
  if (main && live) {
    const every = parseInt(main.dataset.live, 10) || 2000;
    window.setInterval(refresh, every);
  }
})();
