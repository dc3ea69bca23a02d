-- A state database written by the GRDB-based store (GRDB 7.10, at 1a52cf9): `syncbadge add`, three
-- `syncbadge set`, then syncbadged stopped and `sqlite3 state.sqlite .dump`. Schema v2 (grdb_migrations: v1,
-- v2-identity-digest). GRDBMigrationTests opens it with today's store.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
INSERT INTO grdb_migrations VALUES('v1');
INSERT INTO grdb_migrations VALUES('v2-identity-digest');
CREATE TABLE IF NOT EXISTS "meta" ("key" TEXT PRIMARY KEY NOT NULL, "value" INTEGER NOT NULL);
INSERT INTO meta VALUES('lastGen',1);
CREATE TABLE IF NOT EXISTS "root" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "path" BLOB NOT NULL UNIQUE, "ignoreDefaults" BOOLEAN NOT NULL DEFAULT 1, "addedAt" DATETIME NOT NULL);
INSERT INTO root VALUES(1,X'2f746d702f6772646266782f726f6f74',1,'2026-11-26 06:34:01');
CREATE TABLE IF NOT EXISTS "entry" ("rootId" INTEGER NOT NULL REFERENCES "root"("id") ON DELETE CASCADE, "path" BLOB NOT NULL, "kind" INTEGER NOT NULL, "state" INTEGER NOT NULL, "gen" INTEGER NOT NULL, "progress" INTEGER, "message" TEXT, "badge" TEXT, "identity" INTEGER, "ruleIgnored" BOOLEAN NOT NULL DEFAULT 0, PRIMARY KEY ("rootId", "path")) WITHOUT ROWID;
INSERT INTO entry VALUES(1,X'',1,0,1,NULL,NULL,NULL,NULL,0);
INSERT INTO entry VALUES(1,X'612e747874',0,3,1,NULL,NULL,NULL,-4844736972293674353,0);
INSERT INTO entry VALUES(1,X'737562',1,4,1,NULL,'disk full',NULL,NULL,0);
INSERT INTO entry VALUES(1,X'7375622f622e747874',0,1,1,NULL,'syncbadge-cli stopped before this finished syncing',NULL,NULL,0);
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('root',6);
COMMIT;
