//! The HTTP + SSE adapter that serves `ui/` to a browser.
