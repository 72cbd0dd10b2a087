"""Container support: the gate the images run and the device specs their services are made of."""
