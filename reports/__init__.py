"""Report templates and assets (installed as advisor._reports)."""
