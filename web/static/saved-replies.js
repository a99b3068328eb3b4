// The case page's saved replies (issue 17; issue 38: offered in the reply, reject and
// close forms, each already filled for the case), served as a file so the Content-
// Security-Policy can forbid inline script (issue 16). Without this script "Use" is a
// GET that reloads the page with the chosen text in that form; with it, the text is put
// into the form's message where the cursor is, keeping what was already typed, and the
// page stays. Listens on the document, so it keeps working after live.js swaps #live.
document.addEventListener("submit", function (event) {
  const form = event.target;
  if (!form.classList || !form.classList.contains("saved-replies")) return;
  const option = form.querySelector("select[name=saved]").selectedOptions[0];
  const reply = document.getElementById(form.dataset.target || "reply-text");
  if (!option || !reply) return;
  event.preventDefault();
  const text = option.dataset.text || "";
  const start = reply.selectionStart ?? reply.value.length;
  const end = reply.selectionEnd ?? start;
  reply.value = reply.value.slice(0, start) + text + reply.value.slice(end);
  reply.focus();
  reply.setSelectionRange(start + text.length, start + text.length);
});
