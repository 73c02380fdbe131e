"""What runs on the nodes, one subpackage per target system."""
