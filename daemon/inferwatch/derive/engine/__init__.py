"""Engine derivations: speed, MAL, step rate, busy periods, crashes, start-ups."""
