"""Pure pieces many packages use: metric estimators, level identity, memory and precision."""
