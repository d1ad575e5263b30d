from pg_support import pg_cluster, pg_db, pg_url

__all__ = ["pg_cluster", "pg_db", "pg_url"]
