print("healthd-bench")
