"""The status page at ``/`` and the replay report: data assembly (view), rendering (render)."""
