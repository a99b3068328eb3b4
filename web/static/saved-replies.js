// The case page's saved replies (Offered in the reply, reject and
// close forms, each already filled for the case), served as a file so the Content-
// Security-Policy can forbid inline script. Without this script "Use" is a
// GET that reloads the page with the chosen text in that form; with it, the text is put
// into the form's message where the cursor is, keeping what was already typed, and the
// page stays. Listens on the document, so it keeps working after live.js swaps #live.
// A message field that starts as a standard text, and where that text is shown.
const STANDARD = { "reject-reply": "preview-reject" };
document.addEventListener("submit", function (event) {
  const form = event.target;
  if (!form.classList || !form.classList.contains("saved-replies")) return;
  const option = form.querySelector("select[name=saved]").selectedOptions[0];
  const reply = document.getElementById(form.dataset.target || "reply-text");
  if (!option || !reply) return;
  event.preventDefault();
  const text = option.dataset.text || "";
  // The rejection's message starts as the standard one (its words shown beside it in
  // #preview-reject). A saved reply chosen while that is untouched replaces it, as the
  // script-less GET does; before, it was put in front of it, both sent glued together.
  const standard = STANDARD[reply.id] && document.getElementById(STANDARD[reply.id]);
  if (standard && reply.value.trim() === standard.textContent.trim()) reply.value = "";
  const start = reply.selectionStart ?? reply.value.length;
  const end = reply.selectionEnd ?? start;
  reply.value = reply.value.slice(0, start) + text + reply.value.slice(end);
  reply.focus();
  reply.setSelectionRange(start + text.length, start + text.length);
});
