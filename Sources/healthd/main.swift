print("healthd")
