"""gotemplate: the Go text/template subset that rule and notification templates use."""
