-- Run once by the postgres image on an empty data volume: one database for the gateway's
-- catalog (POSTGRES_DB, created by the image) and one readings database per backing
-- service, so each service's migrations and tables stay its own.
CREATE DATABASE ocean;
CREATE DATABASE weather;
CREATE DATABASE airquality;
