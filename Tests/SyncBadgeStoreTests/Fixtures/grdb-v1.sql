-- A schema-v1 state database as the GRDB-based store's migrator created it (before the identity
-- digest migration): the CREATE statements in the form GRDB's table generator wrote
-- them (the same form as grdb-v2.sql's, which a GRDB build wrote), one root, a directory and a
-- synced file with its four identity fields. GRDBMigrationTests opens it with today's store.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
INSERT INTO grdb_migrations VALUES('v1');
CREATE TABLE IF NOT EXISTS "meta" ("key" TEXT PRIMARY KEY NOT NULL, "value" INTEGER NOT NULL);
INSERT INTO meta VALUES('lastGen',7);
CREATE TABLE IF NOT EXISTS "root" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "path" BLOB NOT NULL UNIQUE, "ignoreDefaults" BOOLEAN NOT NULL DEFAULT 1, "addedAt" DATETIME NOT NULL);
INSERT INTO root VALUES(1,X'2f72',0,'2026-11-20 10:00:00');
CREATE TABLE IF NOT EXISTS "entry" ("rootId" INTEGER NOT NULL REFERENCES "root"("id") ON DELETE CASCADE, "path" BLOB NOT NULL, "kind" INTEGER NOT NULL, "state" INTEGER NOT NULL, "gen" INTEGER NOT NULL, "progress" INTEGER, "message" TEXT, "badge" TEXT, "inode" INTEGER, "size" INTEGER, "mtimeNs" INTEGER, "ctimeNs" INTEGER, "ruleIgnored" BOOLEAN NOT NULL DEFAULT 0, PRIMARY KEY ("rootId", "path")) WITHOUT ROWID;
INSERT INTO entry VALUES(1,X'',1,0,1,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0);
INSERT INTO entry VALUES(1,X'78',0,3,7,NULL,NULL,'custom',42,3,1700000000123456789,5,0);
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('root',1);
COMMIT;
