// The ticket page's live status, served as a file so the Content-Security-Policy can
// forbid inline script. The page names its JSON in data-ticket-url.
// Live status: poll the ticket's JSON and redraw the status and the conversation.
(function () {
  // A refused form is answered with the page itself, so the address bar shows the
  // POST-only URL the form went to (a reload would be a 405). The page names its own
  // address in #page-url; the address bar is set to it, keeping the error and the text.
  const own = document.getElementById("page-url");
  if (own && own.dataset.url && location.pathname !== own.dataset.url && history.replaceState) {
    history.replaceState(null, "", own.dataset.url);
  }
  const url = document.getElementById("messages").dataset.ticketUrl;
  const statusEl = document.getElementById("case-status");
  const messagesEl = document.getElementById("messages");
  let last = messagesEl.querySelectorAll(".msg").length;
  // A closed or withdrawn case (CaseStatus::is_at_rest) has no work left that could
  // change it; only a staff reply still can, so the page then looks every 30 s instead
  // of every 2 s, and not at all while the tab is hidden.
  const AT_REST = ["closed", "cancelled"];
  let every = statusEl && AT_REST.includes(statusEl.dataset.status) ? 30000 : 2000;
  let lastPoll = Date.now();
  async function poll() {
    if (document.hidden || Date.now() - lastPoll < every - 100) return;
    lastPoll = Date.now();
    try {
      const resp = await fetch(url, { credentials: "same-origin", headers: { accept: "application/json" } });
      if (!resp.ok) return;
      const t = await resp.json();
      if (t.case && statusEl) { statusEl.textContent = t.case.status_text; statusEl.dataset.status = t.case.status; }
      if (t.case) every = AT_REST.includes(t.case.status) ? 30000 : 2000;
      // The offers and the "a person has it" note follow the case live.
      const show = (id, on) => { const el = document.getElementById(id); if (el) el.hidden = !on; };
      if (t.case) {
        show("person-form", t.case.may_ask_for_person);
        show("withdraw-box", t.case.may_withdraw);
        show("with-a-person", t.case.status === "escalated");
        const wait = document.getElementById("reply-time");
        if (wait) { wait.textContent = t.case.reply_time_text || ""; wait.hidden = !t.case.reply_time_text; }
      }
      const refunds = document.getElementById("refunds");
      if (t.case && refunds) {
        refunds.replaceChildren(...t.case.refunds.map(r => {
          const tr = document.createElement("tr");
          const a = document.createElement("td"); a.textContent = r.amount_text; a.dataset.amount = r.amount + " " + r.currency;
          const b = document.createElement("td"); b.textContent = r.status_text; b.dataset.refundStatus = r.status;
          tr.append(a, b); return tr;
        }));
      }
      if (t.messages.length !== last) {
        last = t.messages.length;
        messagesEl.replaceChildren(...t.messages.map(m => {
          const div = document.createElement("div"); div.className = "msg " + m.author;
          const meta = document.createElement("div"); meta.className = "meta"; meta.textContent = m.author_label + " · ";
          const at = document.createElement("time"); at.setAttribute("datetime", m.at); at.textContent = m.at;
          meta.append(at);
          div.append(meta, document.createTextNode(m.new_text));
          // What the customer quoted, forwarded or signed is folded away, as
          // the server renders it.
          if (m.earlier) {
            const fold = document.createElement("details"); fold.className = "earlier";
            const summary = document.createElement("summary");
            summary.textContent = messagesEl.dataset.earlierLabel;
            fold.append(summary, document.createTextNode(m.earlier));
            div.append(fold);
          }
          return div;
        }));
        if (window.localTimes) window.localTimes(messagesEl);
      }
    } catch (e) { /* offline: try again at the next tick */ }
  }
  setInterval(poll, 2000);
  // A file goes up as its bytes to the ticket's API (the session's CSRF token
  // in X-CSRF-Token); the page then shows it in the list. The server reads the type from
  // the bytes and refuses what is not an image or a PDF.
  const upload = document.getElementById("upload-form");
  if (upload) upload.addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = document.getElementById("file");
    const error = document.getElementById("upload-error");
    const csrf = document.querySelector("#chat input[name=csrf]");
    if (!input.files.length) return;
    const file = input.files[0];
    const resp = await fetch(upload.dataset.uploadUrl + "?name=" + encodeURIComponent(file.name), {
      method: "POST", credentials: "same-origin", body: file,
      headers: { "content-type": "application/octet-stream", "x-csrf-token": csrf ? csrf.value : "" },
    });
    if (resp.ok) { location.reload(); return; }
    // The page's own words for the error (in the customer's language), by its code;
    // the API's message is English and for developers.
    let code = "internal";
    try { code = (await resp.json()).error.code || code; } catch (e) { /* not JSON */ }
    error.textContent = upload.getAttribute("data-error-" + code) || upload.getAttribute("data-error-internal");
    error.hidden = false;
  });
})();
