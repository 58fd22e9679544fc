-- title: every geometry type (POINT, LINESTRING, POLYGON with a hole, MULTI*, GEOMETRYCOLLECTION, empty collection), an SRID, SPATIAL indexes on InnoDB, MyISAM and Aria
-- source: MariaDB server mysql-test/main/gis.test, main/gis-rtree.test, main/spatial_utility_function_srid.test (ST_SRID); mysql-test/suite/innodb_gis/t/rtree.test
CREATE TABLE g (
  id INT PRIMARY KEY,
  p POINT, l LINESTRING, pg POLYGON, mp MULTIPOINT, ml MULTILINESTRING, mpg MULTIPOLYGON, gc GEOMETRYCOLLECTION, anyg GEOMETRY
) ENGINE=InnoDB;
INSERT INTO g VALUES
  (1, ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)'),
   ST_GeomFromText('POLYGON((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 4 2, 4 4, 2 4, 2 2))'),
   ST_GeomFromText('MULTIPOINT(1 1, 2 2)'), ST_GeomFromText('MULTILINESTRING((0 0, 1 1), (2 2, 3 3))'),
   ST_GeomFromText('MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))'),
   ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))'), ST_GeomFromText('POINT(-179.999999 89.123456789)', 4326)),
  (2, ST_GeomFromText('POINT(-0 1e300)'), NULL, NULL, NULL, NULL, NULL, ST_GeomFromText('GEOMETRYCOLLECTION EMPTY'), ST_GeomFromText('LINESTRING(1 1, 1 1)')),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TABLE gi (id INT PRIMARY KEY, p POINT NOT NULL, SPATIAL INDEX (p)) ENGINE=InnoDB;
CREATE TABLE gm (id INT PRIMARY KEY, p GEOMETRY NOT NULL, SPATIAL KEY sp (p)) ENGINE=MyISAM;
CREATE TABLE ga (id INT PRIMARY KEY, p GEOMETRY NOT NULL, SPATIAL KEY sp (p)) ENGINE=Aria;
INSERT INTO gi VALUES (1, POINT(0, 0)), (2, POINT(1.5, -2.25)), (3, POINT(1e10, 1e-10));
INSERT INTO gm SELECT id, p FROM gi;
INSERT INTO ga SELECT id, p FROM gi;
