// Copy buttons (progressive enhancement: without script the text is still selectable).
for (const button of document.querySelectorAll('[data-copy]')) button.hidden = false;
// A browser skips `autofocus` on an element that is hidden when it looks, so focus it now it shows.
document.querySelector('[data-copy][autofocus]')?.focus();
document.addEventListener('click', async (event) => {
  const button = event.target.closest('[data-copy]');
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  const status = document.querySelector('.copy-status');
  try {
    await navigator.clipboard.writeText(source.textContent);
    if (status) status.textContent = 'Copied to the clipboard.';
  } catch {
    getSelection().selectAllChildren(source);
    if (status) status.textContent = 'Selected: press Ctrl+C (or Cmd+C) to copy.';
  }
});
