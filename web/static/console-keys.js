// The case page's keyboard, served as a file so the Content-Security-Policy
// can forbid inline script: j / k the next and previous case of the queue tab,
// a approve and go on to the next case (first the reply, when the customer asked for a
// person), r open the rejection (its reason), n the next
// case (from the tab's end, its first), ? this help. A key never fires while the reader
// types in a field, holds a modifier, or repeats it by holding it down. Every action is
// an ordinary link or button of the page, so nothing here works without the page.
(function () {
  function typing(target) {
    if (!target || !target.tagName) return false;
    const tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }
  function go(id) {
    const link = document.getElementById(id);
    if (link && link.href) { location.href = link.href; return true; }
    return false;
  }
  function help(show) {
    const box = document.getElementById("shortcuts");
    if (!box) return;
    box.hidden = show === undefined ? !box.hidden : !show;
  }
  function press(id) {
    const button = document.getElementById(id);
    if (button && !button.disabled) { button.click(); return true; }
    return false;
  }
  // A customer who asked for a person is written to before their refund is approved
  // (docs/spec/roles.md): `a` then opens the reply, and approves once it is written.
  function replyFirst() {
    const reply = document.getElementById("approve-reply");
    if (!reply || reply.value.trim() !== "") return false;
    reply.focus();
    return true;
  }
    function reject() {
    const details = document.getElementById("reject-details");
    if (details) details.open = true;
    const reason = document.getElementById("reject-reason");
    if (reason) { reason.focus(); return true; }
    return false;
  }
  const keys = {
    j: () => go("next-case"),
    k: () => go("previous-case"),
    n: () => go("next-case") || go("then-case"),
    a: () => replyFirst() || press("approve-next"),
    r: reject,
    "?": () => { help(); return true; },
    Escape: () => { help(false); return true; },
  };
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (typing(event.target) && event.key !== "Escape") return;
    const action = keys[event.key];
    if (action && action()) event.preventDefault();
  });
  document.addEventListener("click", function (event) {
    const id = event.target && event.target.closest && event.target.closest("button") && event.target.closest("button").id;
    if (id === "show-shortcuts") help(true);
    if (id === "hide-shortcuts") help(false);
  });
})();
