"""DoctorService, logging and bundle export (SDD §16)."""
