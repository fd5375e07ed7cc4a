"""``inferwatch install-service`` and ``uninstall-service``: the systemd unit for this
installation, the example config, and the systemctl calls around them."""
