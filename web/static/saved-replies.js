// The case page's saved replies (issue 17), served as a file so the Content-Security-
// Policy can forbid inline script (issue 16). Without this script the "Use" button is a
// GET that reloads the page with the chosen text in the reply; with it, the text is put
// into the reply where the cursor is, keeping what was already typed, and the page stays.
// Listens on the document, so it keeps working after live.js swaps the #live block.
document.addEventListener("submit", function (event) {
  const form = event.target;
  if (form.id !== "saved-replies") return;
  const option = form.querySelector("select[name=saved]").selectedOptions[0];
  const reply = document.getElementById("reply-text");
  if (!option || !reply) return;
  event.preventDefault();
  const text = option.dataset.text || "";
  const start = reply.selectionStart ?? reply.value.length;
  const end = reply.selectionEnd ?? start;
  reply.value = reply.value.slice(0, start) + text + reply.value.slice(end);
  reply.focus();
  reply.setSelectionRange(start + text.length, start + text.length);
});
