// Presence on a case: every 10 s this page says whether its reader is viewing
// the case or replying (a message box has the focus or holds text), and shows who else is
// on it: "Ann is replying". A hint for people, never a lock: the verdict's fingerprint and
// the case's versioned updates decide what a late action may do.
(function () {
  const el = document.getElementById("presence");
  if (!el) return;
  const url = "/api/v1/cases/" + encodeURIComponent(el.dataset.case) + "/presence";
  const every = Number(el.dataset.every) || 10000;

  function activity() {
    const boxes = [...document.querySelectorAll("textarea")];
    const busy = boxes.some(t => t === document.activeElement || t.value.trim() !== t.defaultValue.trim());
    return busy ? "replying" : "viewing";
  }

  async function tell() {
    try {
      const resp = await fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json", "x-csrf-token": el.dataset.csrf },
        body: JSON.stringify({ activity: activity() }),
      });
      if (resp.ok) {
        const others = (await resp.json()).others || [];
        el.textContent = others.map(o => o.name + " is " + o.activity).join(" · ");
        el.hidden = others.length === 0;
      }
    } catch (e) { /* offline or mid-deploy: say so at the next tick */ }
  }

  async function loop() {
    if (!document.hidden) await tell();
    setTimeout(loop, every);
  }
  document.addEventListener("focusin", e => { if (e.target.tagName === "TEXTAREA") tell(); });
  loop();
})();
