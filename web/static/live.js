// Console pages that refresh themselves while work is in flight, served as a
// file so the Content-Security-Policy can forbid inline script.
//
// The page marks its data with <div id="live" data-live-url=… data-live-every=ms>; this
// fetches that URL every few seconds and swaps in the new #live when it changed. A page
// whose fresh copy has no data-live-url has come to rest (a closed or withdrawn case:
// CaseStatus::is_at_rest), so polling stops. Text the reader is typing is never thrown
// away: while any field differs from what the server sent, or has the focus, the page
// says that it changed and offers a reload instead of redrawing under the reader.
(function () {
  // A refused form is answered with the page itself, so the address bar shows the
  // POST-only URL the form went to (a reload would be a 405). The page names its own
  // address in #page-url; the address bar is set to it, keeping the error and the text.
  const own = document.getElementById("page-url");
  if (own && own.dataset.url && location.pathname !== own.dataset.url && history.replaceState) {
    history.replaceState(null, "", own.dataset.url);
  }
  let live = document.getElementById("live");
  if (!live || live.dataset.liveUrl === undefined) return;
  const url = live.dataset.liveUrl || location.pathname + location.search;
  const every = Number(live.dataset.liveEvery) || 3000;
  let last = live.innerHTML;

  function edited(field) {
    if (field.type === "hidden" || field.type === "submit") return false;
    if (field === document.activeElement) return true;
    if (field.type === "checkbox" || field.type === "radio") return field.checked !== field.defaultChecked;
    if (field.tagName === "SELECT") return [...field.options].some(o => o.selected !== o.defaultSelected);
    return field.value !== field.defaultValue;
  }

  function tellChanged() {
    if (document.getElementById("live-changed")) return;
    const p = document.createElement("p");
    p.id = "live-changed"; p.className = "notice";
    const a = document.createElement("a"); a.href = url; a.textContent = "Reload";
    p.append("This page changed while you were typing. ", a, " to see it (your text is lost on reload).");
    live.before(p);
  }

  async function poll() {
    if (document.hidden) return setTimeout(poll, every);
    try {
      const resp = await fetch(url, { credentials: "same-origin", headers: { accept: "text/html" } });
      if (resp.ok) {
        const fresh = new DOMParser().parseFromString(await resp.text(), "text/html").getElementById("live");
        if (fresh && fresh.innerHTML !== last) {
          if ([...live.querySelectorAll("input, textarea, select")].some(edited)) return tellChanged();
          last = fresh.innerHTML;
          live.replaceWith(document.adoptNode(fresh));
          live = fresh;
          if (window.localTimes) window.localTimes(fresh);
          if (fresh.dataset.liveUrl === undefined) return;
        }
      }
    } catch (e) { /* offline or mid-deploy: try again at the next tick */ }
    setTimeout(poll, every);
  }
  setTimeout(poll, every);
})();
