"""Client operation generators and the code that turns replies into history rows."""
