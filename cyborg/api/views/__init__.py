"""Objects turned into response dicts, one module per resource."""
