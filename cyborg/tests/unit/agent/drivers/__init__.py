"""Unit tests of the accelerator drivers, against recorded sysfs trees."""
