"""One module per ``syncgate`` subcommand: argument wiring and printing only, no logic."""
