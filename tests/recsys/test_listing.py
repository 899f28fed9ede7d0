"""Products an export holds but the shop does not sell (drafts, archived, hidden, disabled) are
left out of the catalogue, said (recsys/io/listing.py)."""

from __future__ import annotations

from recsys.io.readers import read_items
from recsys.io.schema import Schema

SHOPIFY = """Handle,Title,Vendor,Published,Option1 Name,Option1 Value,Variant SKU,Status
linen-shirt,Linen Shirt,Harbor,TRUE,Size,S,LS-S,active
linen-shirt,,,,,M,LS-M,
wrap-dress,Wrap Dress,Nordic,TRUE,Size,S,WD-S,draft
wrap-dress,,,,,M,WD-M,
old-boots,Old Boots,Harbor,FALSE,Title,Default Title,OB-1,archived
wool-scarf,Wool Scarf,Harbor,FALSE,Title,Default Title,WS-1,active
"""


def test_a_shopify_export_s_drafts_archived_and_unpublished_products_are_left_out(tmp_path):
    path = tmp_path / "products_export.csv"
    path.write_text(SHOPIFY)
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["linen-shirt"]
    assert items.iloc[0]["Size"] == "S|M"  # its variants read into it first
    assert "Status" not in items.columns and "Published" not in items.columns
    assert ("left out 3 items the shop does not sell by Published, Status (drafts, archived, hidden or "
            "disabled; a schema's [columns] entry for the column keeps them)") in report.notices
    # a schema that names the column reads it as any other: every product is kept
    items, _ = read_items(path, schema=Schema(columns={"Status": "other", "Published": "other"}))
    assert items["item_id"].tolist() == ["linen-shirt", "wrap-dress", "old-boots", "wool-scarf"]
    assert items["Status"].tolist() == ["active", "draft", "archived", "active"]


def test_woocommerce_and_magento_say_it_their_own_ways(tmp_path):
    woo = tmp_path / "woo.csv"
    woo.write_text("SKU,Name,Published,Visibility in catalog\nW1,Shirt,1,visible\nW2,Dress,0,visible\n"
                   "W3,Hat,-1,visible\nW4,Scarf,1,hidden\nW5,Belt,1,search\n")
    assert read_items(woo)[0]["item_id"].tolist() == ["W1", "W5"]
    magento = tmp_path / "magento.csv"
    magento.write_text('sku,name,product_online,visibility\nM1,Bag,1,"Catalog, Search"\n'
                       'M2,Tote,2,"Catalog, Search"\nM3,Strap,1,Not Visible Individually\nM4,Pouch,1,Search\n')
    assert read_items(magento)[0]["item_id"].tolist() == ["M1", "M4"]


def test_a_column_of_that_name_that_says_something_else_is_a_column(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("item_id,title,status\nA1,Shirt,active\nA2,Dress,discontinued\n")
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["A1", "A2"] and items["status"].tolist() == ["active", "discontinued"]
    assert not any("does not sell" in n for n in report.notices)


def test_a_store_not_open_yet_keeps_every_product(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("Handle,Title,Status\na,Shirt,draft\nb,Dress,draft\n")
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["a", "b"]
    assert report.notices == ["every item is marked not for sale by Status (drafts, archived, hidden or "
                              "disabled): all are read, as a store that is not open yet"]


def test_a_spanish_a_dutch_and_a_german_export_say_it_in_their_languages(tmp_path):
    spanish = tmp_path / "productos.csv"
    spanish.write_text("referencia,nombre,estado\nE1,Camisa,activo\nE2,Vestido,borrador\nE3,Bolso,Archivado\n",
                       encoding="utf-8")
    items, report = read_items(spanish)
    assert items["item_id"].tolist() == ["E1"] and "estado" not in items.columns
    assert any("left out 2 items the shop does not sell by estado" in n for n in report.notices)
    dutch = tmp_path / "artikelen.csv"
    dutch.write_text("artikelnummer;naam;status;gepubliceerd\nN1;Fiets;actief;ja\nN2;Lamp;concept;ja\n"
                     "N3;Jas;actief;nee\n", encoding="utf-8")
    assert read_items(dutch)[0]["item_id"].tolist() == ["N1"]
    german = tmp_path / "artikel.csv"
    german.write_text("Artikelnummer,Produktname,Status,Veröffentlicht\nD1,Pfanne,aktiv,ja\n"
                      "D2,Topf,Entwurf,ja\nD3,Deckel,aktiv,nein\n", encoding="utf-8")
    assert read_items(german)[0]["item_id"].tolist() == ["D1"]
    # a Spanish "estado" that is a product's condition is a column like any other
    used = tmp_path / "usados.csv"
    used.write_text("referencia,nombre,estado\nU1,Camisa,nuevo\nU2,Vestido,usado\n", encoding="utf-8")
    items, _ = read_items(used)
    assert items["item_id"].tolist() == ["U1", "U2"] and items["estado"].tolist() == ["nuevo", "usado"]
