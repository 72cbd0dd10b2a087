"""Package marker of the forward fixture (our own shapes, not upstream code)."""
