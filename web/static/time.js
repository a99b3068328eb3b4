// Times in the viewer's own zone, served as a file so the
// Content-Security-Policy can forbid inline script.
//
// The server writes every moment as <time datetime="RFC 3339">… UTC</time>, readable as
// it stands; this rewrites the text in the zone and language of the browser (the page's
// own language on customer pages), and keeps the UTC moment in the title. Pages that
// redraw parts of themselves (live.js, ticket.js) call window.localTimes(root) again.
(function () {
  const lang = document.documentElement.lang || undefined;
  // Components, not dateStyle/timeStyle: those two cannot be combined with a zone name.
  const parts = { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" };
  let format;
  try {
    format = new Intl.DateTimeFormat(lang, parts);
  } catch (e) {
    format = new Intl.DateTimeFormat(undefined, parts);
  }
  function localTimes(root) {
    for (const el of (root || document).querySelectorAll("time[datetime]")) {
      if (el.dataset.local === "1") continue;
      const at = new Date(el.getAttribute("datetime"));
      if (isNaN(at)) continue;
      el.title = el.textContent;
      el.textContent = format.format(at);
      el.dataset.local = "1";
    }
  }
  window.localTimes = localTimes;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => localTimes());
  else localTimes();
})();
